package api

import "strings"

// Workflow ids memagent derives from another workflow's id: a batch's
// DocumentQA children and the sign-off of a review or batch. Temporal's
// HTTP API puts the workflow id in the URL path, where '/' (even as %2F)
// does not reach the server and '%', '?', '#', ':' and spaces mean
// something else, so a derived id adds only letters, digits and '.':
//
//	<batch id>.<seq>           a batch item's DocumentQA run (sample 0)
//	<batch id>.<seq>.s<k>      the run of the item's sample k
//	<review or batch id>.signoff  the sign-off of a review or batch
//
// A derived id never equals another one derived from the same id: a child's
// last part is a number or s<number>, a sign-off's is "signoff". Nor one
// memagent derives from nothing (memagent-qa-…, memagent-review-…,
// memagent-batch-…Z, memagent-estimate-…, batch-<schedule>-<time>Z): those
// never end in ".<number>", ".s<number>" or ".signoff" after an id of
// another family. An id chosen by hand (--id) may still end so; a review or
// batch whose id ends in ".signoff" cannot be signed off (SignOffInput's
// Validate refuses it).
//
// Runs started before the change keep the ids they had, with '/':
// <batch id>/<seq>, <batch id>/<seq>.s<k> and <id>/signoff. A batch
// decides its children's form once, in its first run, and keeps it through
// continue-as-new; a sign-off started under the old id stays there, and
// memclient, the starter and the desk find it. Everything that reads an id
// accepts both forms. An id proves nothing by itself: whatever runs under
// one is checked for its type, task queue and chain (or its parent) before
// anything of it is believed.

// SignOffSuffix ends the workflow id of a sign-off: the id of the review or
// batch it signs off, then this. One sign-off per review or batch; the
// sign-off writes its audit log and exports beside that run's outputs,
// under signoff/.
const SignOffSuffix = ".signoff"

// LegacySignOffSuffix ends the workflow id of a sign-off started before
// SignOffSuffix: such a sign-off keeps its id until it completes.
const LegacySignOffSuffix = "/signoff"

// SignOffWorkflowID is the workflow id of a new sign-off of the review or
// batch whose workflow id is subject.
func SignOffWorkflowID(subject string) string { return subject + SignOffSuffix }

// LegacySignOffWorkflowID is the workflow id a sign-off of subject had
// when it was started before SignOffSuffix.
func LegacySignOffWorkflowID(subject string) string { return subject + LegacySignOffSuffix }

// SignOffSubjectOf is the review or batch id a sign-off's workflow id
// names, in either form; ok is false for an id of no sign-off.
func SignOffSubjectOf(id string) (subject string, ok bool) {
	for _, suffix := range []string{SignOffSuffix, LegacySignOffSuffix} {
		if s, found := strings.CutSuffix(id, suffix); found && s != "" {
			return s, true
		}
	}
	return "", false
}

// IsSignOffWorkflowIDOf says whether id is the workflow id, in either
// form, of a sign-off of subject.
func IsSignOffWorkflowIDOf(id, subject string) bool {
	return subject != "" && (id == SignOffWorkflowID(subject) || id == LegacySignOffWorkflowID(subject))
}

// BatchItemWorkflowID is the workflow id of the DocumentQA run of one
// sample of a batch item: <batch id>.<seq> for sample 0 (the item's only
// run in a batch without samples), <batch id>.<seq>.s<k> for sample k:
// the batch's id, '.', and the item's SignOffCellID.
func BatchItemWorkflowID(batchID string, seq, sample int) string {
	return batchID + "." + SignOffCellID(seq, sample)
}

// LegacyBatchItemWorkflowID is the id the child of a batch started before
// BatchItemWorkflowID has: <batch id>/<seq>, <batch id>/<seq>.s<k>.
func LegacyBatchItemWorkflowID(batchID string, seq, sample int) string {
	return batchID + "/" + SignOffCellID(seq, sample)
}
