package docconv

import (
	"archive/zip"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
)

// numLevel is how a level of a Word list numbers its items: its format
// (numFmt: "bullet", "decimal", "lowerLetter", ...), its text ("%1.",
// "(%2)") and its first number.
type numLevel struct {
	format, text string
	start        int
}

// docxNumbering is a Word document's list definitions (word/numbering.xml):
// each list (numId) by its levels, from 0.
type docxNumbering map[string]map[int]numLevel

// readNumbering reads a DOCX's list definitions. A part over the styles'
// bounds (maxStylesBytes, maxStylesRunBytes, maxStyles definitions) or
// not well-formed is read as far as it goes: a list it leaves out is
// marked with a bullet, which costs a reader nothing of the text.
func readNumbering(f *zip.File) docxNumbering {
	rc, err := f.Open()
	if err != nil {
		return nil
	}
	defer rc.Close()
	dec := xml.NewDecoder(&runGuard{r: io.LimitReader(rc, maxStylesBytes), max: maxStylesRunBytes})
	abstract := map[string]map[int]numLevel{}
	nums := map[string]string{}
	var absID, numID string
	lvl, depth, defs := -1, 0, 0
	var cur numLevel
read:
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if defs++; depth > maxDepth || defs > maxStyles*10 {
				break read
			}
			if t.Name.Space != wordNS {
				continue
			}
			switch t.Name.Local {
			case "abstractNum":
				absID = attr(t, "abstractNumId")
				abstract[absID] = map[int]numLevel{}
			case "lvl":
				if absID != "" {
					lvl, _ = strconv.Atoi(attr(t, "ilvl"))
					cur = numLevel{format: "decimal", start: 1}
				}
			case "start":
				if lvl >= 0 {
					cur.start, _ = strconv.Atoi(attr(t, "val"))
				}
			case "numFmt":
				if lvl >= 0 {
					cur.format = attr(t, "val")
				}
			case "lvlText":
				if lvl >= 0 {
					cur.text = attr(t, "val")
				}
			case "num":
				numID = attr(t, "numId")
			case "abstractNumId":
				if numID != "" {
					nums[numID] = attr(t, "val")
				}
			}
		case xml.EndElement:
			depth--
			if t.Name.Space != wordNS {
				continue
			}
			switch t.Name.Local {
			case "lvl":
				if lvl >= 0 && lvl < 9 && absID != "" {
					abstract[absID][lvl] = cur
				}
				lvl = -1
			case "abstractNum":
				absID = ""
			case "num":
				numID = ""
			}
		}
	}
	out := docxNumbering{}
	for num, abs := range nums {
		if levels, ok := abstract[abs]; ok {
			out[num] = levels
		}
	}
	return out
}

// listCounter numbers a document's list items as Word does: each list
// (numId) counts its levels apart, and an item restarts the levels below
// its own.
type listCounter struct {
	defs   docxNumbering
	counts map[string]*[9]int
}

// marker is the marker of the next item of list num at level ilvl: "•"
// for a bullet (its symbol font's character means nothing as Unicode),
// the level's text with its numbers ("2.", "(b)", "1.3"), or "" for a
// level that shows none ("none", or numId 0: numbering taken off).
func (c *listCounter) marker(num string, ilvl int) string {
	if num == "" || num == "0" {
		return ""
	}
	ilvl = min(max(ilvl, 0), 8)
	levels, ok := c.defs[num]
	if !ok {
		return "•"
	}
	if c.counts == nil {
		c.counts = map[string]*[9]int{}
	}
	counts := c.counts[num]
	if counts == nil {
		counts = &[9]int{}
		if len(c.counts) < maxStyles {
			c.counts[num] = counts
		}
	}
	lv, ok := levels[ilvl]
	if !ok {
		return "•"
	}
	if counts[ilvl] == 0 {
		counts[ilvl] = lv.start
	} else {
		counts[ilvl]++
	}
	for k := ilvl + 1; k < len(counts); k++ {
		counts[k] = 0
	}
	switch lv.format {
	case "bullet":
		return "•"
	case "none", "":
		return ""
	}
	text := lv.text
	if text == "" {
		text = "%" + strconv.Itoa(ilvl+1) + "."
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] == '%' && i+1 < len(text) && text[i+1] >= '1' && text[i+1] <= '9' {
			k := int(text[i+1] - '1')
			n := counts[k]
			if n == 0 {
				n = levels[k].start
			}
			b.WriteString(formatNumber(n, levels[k].format))
			i++
			continue
		}
		b.WriteByte(text[i])
	}
	return strings.TrimSpace(b.String())
}

// formatNumber writes n in a list level's format.
func formatNumber(n int, format string) string {
	switch format {
	case "lowerLetter", "upperLetter":
		if n < 1 {
			return strconv.Itoa(n)
		}
		s := strings.Repeat(string(rune('a'+(n-1)%26)), (n-1)/26+1)
		if format == "upperLetter" {
			s = strings.ToUpper(s)
		}
		return s
	case "lowerRoman", "upperRoman":
		s := roman(n)
		if format == "lowerRoman" {
			s = strings.ToLower(s)
		}
		return s
	case "decimalZero":
		if n < 10 && n >= 0 {
			return "0" + strconv.Itoa(n)
		}
	}
	return strconv.Itoa(n)
}

// roman writes n (1 to 3999) in Roman numerals, other numbers in digits.
func roman(n int) string {
	if n < 1 || n > 3999 {
		return strconv.Itoa(n)
	}
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}
