package inventory

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/projections"
)

// bruteMatches is what appendMatches must answer: the devices in [lo, hi)
// whose text contains q.
func bruteMatches(texts []string, q string, lo, hi int) []int {
	out := []int{}
	for k := lo; k < hi; k++ {
		if strings.Contains(texts[k], q) {
			out = append(out, k)
		}
	}
	return out
}

func haystackOfTexts(texts []string) *haystack {
	return buildHaystack(len(texts), func(b []byte, k int) []byte { return append(b, texts[k]...) })
}

func TestHaystack(t *testing.T) {
	texts := []string{"printer.lab\n10.0.0.5", "", "ab", "b\x00c", "abab", "x", "lab", "10.0.0.50\nacme"}
	h := haystackOfTexts(texts)
	tests := []struct {
		q      string
		lo, hi int
	}{
		{"lab", 0, len(texts)},
		{"ab", 0, len(texts)},
		{"ab", 3, 5},
		{"b", 2, 3},
		{"\x00", 0, len(texts)},     // the separator is never part of a text
		{"b\x00", 0, len(texts)},    // across a separator
		{"5\x00", 0, len(texts)},    // across the end of a text
		{"\x00c", 0, len(texts)},    // inside a text that holds a NUL
		{"b\x00c", 0, len(texts)},   // a whole text
		{"10.0.0.5", 1, len(texts)}, // the first match is outside the range
		{"x", 5, 5},
		{"nothing", 0, len(texts)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q[%d:%d]", tc.q, tc.lo, tc.hi), func(t *testing.T) {
			want := bruteMatches(texts, tc.q, tc.lo, tc.hi)
			for anchor := -1; anchor < len(tc.q); anchor++ {
				got := h.appendMatches([]int{}, []byte(tc.q), anchor, tc.lo, tc.hi)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("anchor %d: matches (-want +got):\n%s", anchor, diff)
				}
			}
		})
	}
}

// FuzzHaystack: the haystack search answers as strings.Contains on each
// text would, for any texts, query and range.
func FuzzHaystack(f *testing.F) {
	f.Add("printer.lab|10.0.0.5|ab|abab", "ab", 1, 3)
	f.Add("a\x00b|\x00|b", "\x00", 0, 3)
	f.Add("aa|a|aaa", "aa", 0, 3)
	f.Fuzz(func(t *testing.T, joined, q string, lo, hi int) {
		if q == "" {
			return // ListDevices never searches for ""
		}
		texts := strings.Split(joined, "|")
		lo = min(max(lo, 0), len(texts))
		hi = min(max(hi, lo), len(texts))
		h := haystackOfTexts(texts)
		want := bruteMatches(texts, q, lo, hi)
		for anchor := -1; anchor < len(q); anchor++ {
			if got := h.appendMatches([]int{}, []byte(q), anchor, lo, hi); !slices.Equal(want, got) {
				t.Errorf("texts %q, q %q, anchor %d, [%d:%d]: got %v, want %v", texts, q, anchor, lo, hi, got, want)
			}
		}
	})
}

// TestListDevicesSearch pages through q= searches in every order and
// compares with a plain scan of every device.
func TestListDevicesSearch(t *testing.T) {
	h := variedFleet(t, 3*searchChunk+100) // several chunks
	byName := h.inv.sortedBy(SortName)
	// A query that spans the end of one text and the start of the next.
	a, b := string(appendSearch(nil, byName[0])), string(appendSearch(nil, byName[1]))
	across := a[len(a)-2:] + "\x00" + b[:2]
	queries := []string{"h", "1", ".", "lab", " LAB\n", "ü", "<b>", "10.0.1", "10.1.", "acme", "\x00", across, "nothing"}
	sorts := []string{"name", "-name", "ip", "-ip", "first_seen", "-first_seen", "last_seen", "-last_seen"}
	for _, q := range queries {
		for _, s := range sorts {
			field, desc, _ := parseSort(s)
			var want []string
			for _, d := range h.inv.sortedBy(field) {
				if strings.Contains(string(appendSearch(nil, d)), strings.ToLower(strings.TrimSpace(q))) {
					want = append(want, d.ID)
				}
			}
			if desc {
				slices.Reverse(want)
			}
			for _, limit := range []int{1, 7, 1000} {
				if (limit == 1 && len(want) > 60) || (limit == 7 && len(want) > 700) {
					continue // enough paging with the larger pages
				}
				t.Run(fmt.Sprintf("%q/%s/%d", q, s, limit), func(t *testing.T) {
					got := pages(t, h.inv, projections.DeviceFilter{Q: q, Sort: s, Limit: limit})
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("ids (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func TestAppendSearch(t *testing.T) {
	retired := t0
	label := "Kitchen TV"
	d := &device{
		sortKey: "tv.lab",
		Names:   namesOf(map[string]nameRec{"mdns": {Name: "KÜCHE-TV.local"}, "dns": {Name: "TV.lab"}, "ssdp": {Name: "Samsung QE55"}}),
		Label:   &label,
		Addrs:   []*addrRec{{IP: "10.0.0.9"}, {IP: "10.0.0.7", RetiredAt: &retired}},
		MAC:     "3c:22:fb:00:00:01",
		vendor:  "Apple, Inc.",
	}
	want := "tv.lab\ntv.lab\nküche-tv.local\nsamsung qe55\nkitchen tv\n10.0.0.9\n10.0.0.7\n3c:22:fb:00:00:01\napple, inc."
	if got := string(appendSearch([]byte("prefix"), d)); got != "prefix"+want {
		t.Errorf("got %q, want %q", got, "prefix"+want)
	}
	ascii := &device{sortKey: "10.0.0.1", Addrs: []*addrRec{{IP: "10.0.0.1"}}, Label: ptr("MiXeD")}
	if got := string(appendSearch(nil, ascii)); got != "10.0.0.1\nmixed\n10.0.0.1" {
		t.Errorf("got %q", got)
	}
}
