package inventory

import (
	"bytes"
	"slices"
)

// searchChunk is how many devices' text one search call covers: the
// search stops soon after a page is full, and checks for cancellation
// between chunks.
const searchChunk = 512

// haystack is the q= text (appendSearch) of every device of one sort
// order laid end to end, so that a search runs bytes.Index over
// contiguous memory instead of visiting every device. It is built on
// the first search after a change and shared by readers, like the
// sorted orders.
type haystack struct {
	text []byte
	// starts[k] is where device k's text begins; its text ends one byte
	// before starts[k+1] (a separator follows each text).
	starts []int
	// freq counts each byte value in text, to pick the search anchor.
	freq [256]int
}

func newHaystack(s []*device) *haystack {
	return buildHaystack(len(s), func(b []byte, k int) []byte { return appendSearch(b, s[k]) })
}

// buildHaystack lays out the n texts appendText appends.
func buildHaystack(n int, appendText func(b []byte, k int) []byte) *haystack {
	h := &haystack{starts: make([]int, n+1), text: make([]byte, 0, 64*n)}
	for k := range n {
		h.starts[k] = len(h.text)
		h.text = appendText(h.text, k)
		h.text = append(h.text, 0)
	}
	h.starts[n] = len(h.text)
	h.text = slices.Clip(h.text)
	for _, c := range h.text {
		h.freq[c]++
	}
	return h
}

// anchor picks the byte of q to look for first: the one rarest in the
// text, when it is rare enough (under one in 128 bytes) that jumping
// from one of its occurrences to the next beats bytes.Index, which
// looks for q's first byte and falls back to comparing at every
// position once that byte proves common (as "n" of "nothing" is in
// "apple, inc."). -1 means bytes.Index.
func (h *haystack) anchor(q []byte) int {
	best := -1
	for j := 0; j < len(q); j++ {
		if best < 0 || h.freq[q[j]] < h.freq[q[best]] {
			best = j
		}
	}
	if best < 0 || h.freq[q[best]]*128 > len(h.text) {
		return -1
	}
	return best
}

// appendMatches appends, in ascending order, the index of every device in
// [lo, hi) whose text contains q (q not empty), exactly as
// strings.Contains on the device's own text would decide. anchor is a byte
// position of q to search by, or -1 (see haystack.anchor).
func (h *haystack) appendMatches(dst []int, q []byte, anchor, lo, hi int) []int {
	pos, end := h.starts[lo], h.starts[hi]
	k := lo
	for pos < end {
		var x int
		if anchor < 0 {
			x = bytes.Index(h.text[pos:end], q)
		} else {
			x = indexAt(h.text[pos:end], q, anchor)
		}
		if x < 0 {
			break
		}
		x += pos
		for h.starts[k+1] <= x {
			k++
		}
		if x+len(q) < h.starts[k+1] { // inside device k's text
			dst = append(dst, k)
			k++
			pos = h.starts[k]
		} else { // across a separator: not a match of either device
			pos = x + 1
		}
	}
	return dst
}

// indexAt is bytes.Index(s, q), found by looking for q[j] with
// bytes.IndexByte and comparing around each occurrence.
func indexAt(s, q []byte, j int) int {
	c := q[j]
	for i := j; i < len(s); i++ {
		o := bytes.IndexByte(s[i:], c)
		if o < 0 {
			return -1
		}
		i += o
		start := i - j
		if start+len(q) > len(s) {
			return -1 // later occurrences start later still
		}
		if bytes.Equal(s[start:start+len(q)], q) {
			return start
		}
	}
	return -1
}
