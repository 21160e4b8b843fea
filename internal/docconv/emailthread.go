package docconv

import (
	"regexp"
	"strings"

	"github.com/memagent/memagent/internal/memagent"
)

// replyPrefix is a subject's reply or forward marks and list tags:
// "Re: ", "RE[2]: ", "Fwd: ", "AW: ", "[debian-devel] ".
var replyPrefix = regexp.MustCompile(`(?i)^\s*(((re|fw|fwd|aw|wg|sv|vs|antw)\s*(\[\d+\])?\s*:)|\[[^\]]{1,40}\])\s*`)

// baseSubject is a subject without its reply marks and list tags, its
// white space folded and its case folded; replied reports marks.
func baseSubject(s string) (base string, replied bool) {
	for {
		loc := replyPrefix.FindStringIndex(s)
		if loc == nil || loc[1] == 0 {
			break
		}
		if !strings.HasPrefix(strings.TrimSpace(s[:loc[1]]), "[") {
			replied = true
		}
		s = s[loc[1]:]
	}
	return strings.ToLower(strings.Join(strings.Fields(s), " ")), replied
}

// threadMessages groups the index's messages into threads and marks the
// inclusive ones. A message joins the thread of every message its
// References and In-Reply-To name (and of others that name the same
// ones, the mailbox having them or not); its parent is the last message
// of its References the mailbox has, else its In-Reply-To's. A message
// whose headers give it no parent the mailbox has, and whose quoted text
// (prints, by index) an earlier message's own text holds, joins that
// message's thread, its parent (quoteParents). A message linked to no
// other, whose subject is a reply's ("Re: Lease"), joins the thread of
// the earlier messages of the same subject, its parent the latest of
// them. ParentBy says which of these found a parent. A thread is
// numbered by its earliest message.
//
// A message is inclusive when no message replies to it, or when it has an
// attachment none of its replies carries. Duplicates and skipped
// messages are never inclusive; a duplicate is in its original's thread.
func threadMessages(ix *memagent.EmailIndex, prints []msgPrint) {
	msgs := ix.Messages
	parent := make([]int, len(msgs)) // union-find over messages and ids
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	idNode := map[string]int{}
	node := func(id string) int {
		if n, ok := idNode[id]; ok {
			return n
		}
		parent = append(parent, len(parent))
		idNode[id] = len(parent) - 1
		return len(parent) - 1
	}
	for i := range msgs {
		parent[i] = i
	}
	union := func(a, b int) {
		a, b = find(a), find(b)
		if a == b {
			return
		}
		if a > b {
			a, b = b, a
		}
		parent[b] = a
	}
	byID := map[string]int{} // message id → index of its first copy
	for i, m := range msgs {
		if m.MessageID != "" && m.DuplicateOf == 0 {
			if _, ok := byID[m.MessageID]; !ok {
				byID[m.MessageID] = i
			}
		}
	}
	for i, m := range msgs {
		if m.DuplicateOf > 0 {
			union(i, m.DuplicateOf-1)
			continue
		}
		if m.MessageID != "" {
			union(i, node(m.MessageID))
		}
		ids := append(append([]string(nil), m.References...), m.InReplyTo)
		for _, id := range ids {
			if id != "" && id != m.MessageID {
				union(i, node(id))
			}
		}
		// The parent: the last reference the mailbox has, else In-Reply-To.
		for k := len(m.References) - 1; k >= 0 && msgs[i].Parent == 0; k-- {
			if j, ok := byID[m.References[k]]; ok && j != i {
				msgs[i].Parent, msgs[i].ParentBy = j+1, memagent.ParentByReferences
			}
		}
		if j, ok := byID[m.InReplyTo]; ok && msgs[i].Parent == 0 && j != i {
			msgs[i].Parent, msgs[i].ParentBy = j+1, memagent.ParentByInReplyTo
		}
	}
	// Quoted text, for messages whose headers found no parent here.
	read := func(i int) bool { return i < len(msgs) && msgs[i].DuplicateOf == 0 && msgs[i].Skipped == "" }
	if len(prints) == len(msgs) {
		byQuote := quoteParents(prints, func(i int) bool { return read(i) && msgs[i].Parent == 0 }, read)
		for i, j := range byQuote {
			if j >= 0 {
				union(i, j)
				msgs[i].Parent, msgs[i].ParentBy = j+1, memagent.ParentByQuote
			}
		}
	}
	// Subject fallback, for replies linked to nothing the mailbox has.
	size := map[int]int{} // messages of each thread so far
	for i := range msgs {
		size[find(i)]++
	}
	lastBySubject := map[string]int{}
	for i, m := range msgs {
		if m.DuplicateOf > 0 {
			continue
		}
		base, replied := baseSubject(m.Subject)
		if base == "" {
			continue
		}
		if j, ok := lastBySubject[base]; ok && replied && m.Parent == 0 && size[find(i)] == 1 {
			union(i, j)
			msgs[i].Parent, msgs[i].ParentBy = j+1, memagent.ParentBySubject
		}
		lastBySubject[base] = i
	}
	// Number each thread by its earliest message.
	first := map[int]int{}
	for i := range msgs {
		r := find(i)
		if _, ok := first[r]; !ok {
			first[r] = i + 1
		}
		msgs[i].Thread = first[r]
	}
	ix.Threads = len(first)
	// Inclusive: no replies, or an attachment no reply carries.
	children := make([][]int, len(msgs))
	for i, m := range msgs {
		if m.Parent > 0 && m.DuplicateOf == 0 {
			children[m.Parent-1] = append(children[m.Parent-1], i)
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.DuplicateOf > 0 || m.Skipped != "" {
			continue
		}
		if len(children[i]) == 0 {
			m.Inclusive = true
			continue
		}
		for _, a := range m.Attachments {
			carried := false
			for _, c := range children[i] {
				for _, ca := range msgs[c].Attachments {
					carried = carried || ca.Name == a.Name
				}
			}
			if !carried {
				m.Inclusive = true
				break
			}
		}
	}
}
