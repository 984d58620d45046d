package caps

import (
	"fmt"
	"strings"
)

// Bounds of the diff: past them the two sides are shown as one hunk replacing the whole file, which is
// still a correct diff, only a longer one.
const (
	maxDiffLines = 20000 // lines of both sides together
	maxDiffEdits = 2000  // insertions and deletions (Myers' D)
)

type edit struct {
	op   byte // ' ', '-' or '+'
	line string
}

// unifiedDiff is the unified diff (three lines of context) from a to b, both text, labelled with path.
// An empty a is a new file.
func unifiedDiff(path, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	edits := myers(al, bl)
	var out strings.Builder
	from := "a" + path
	if a == "" {
		from = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ b%s\n", from, path)
	const ctx = 3
	// Walk the edits, gathering hunks: runs of changes with up to ctx lines of context around them,
	// joined when the context between two changes is at most 2*ctx lines.
	ai, bi := 0, 0
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			i, ai, bi = i+1, ai+1, bi+1
			continue
		}
		start := max(i-ctx, 0)
		for j := i - 1; j >= start; j-- {
			ai, bi = ai-1, bi-1
		}
		end := i
		for end < len(edits) {
			if edits[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(edits) && edits[run].op == ' ' {
				run++
			}
			if run == len(edits) || run-end > 2*ctx {
				end = min(end+ctx, len(edits))
				break
			}
			end = run
		}
		var na, nb int
		for _, e := range edits[start:end] {
			if e.op != '+' {
				na++
			}
			if e.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ai, na), hunkRange(bi, nb))
		for _, e := range edits[start:end] {
			out.WriteByte(e.op)
			out.WriteString(e.line)
			if !strings.HasSuffix(e.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		ai, bi, i = ai+na, bi+nb, end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline; a last line without one is kept as it is.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// myers is the shortest edit script from a to b (Myers, "An O(ND) Difference Algorithm"), keeping for
// each D only the diagonals it reached, so memory grows with D² rather than D·(N+M). Past the bounds it
// gives the whole of a removed and the whole of b added.
func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	whole := func() []edit {
		out := make([]edit, 0, n+m)
		for _, l := range a {
			out = append(out, edit{'-', l})
		}
		for _, l := range b {
			out = append(out, edit{'+', l})
		}
		return out
	}
	if n+m > maxDiffLines {
		return whole()
	}
	// v[k] for k in [-d, d] is stored at v[k+d] of trace[d], after step d.
	var trace [][]int
	prev := []int{0}
	for d := 0; d <= min(n+m, maxDiffEdits); d++ {
		cur := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var x int
			get := func(k int) int { return prev[k+d-1] } // prev holds [-(d-1), d-1]
			switch {
			case d == 0:
				x = 0
			case k == -d || (k != d && get(k-1) < get(k+1)):
				x = get(k + 1)
			default:
				x = get(k-1) + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			cur[k+d] = x
			if x >= n && y >= m {
				trace = append(trace, cur)
				return backtrack(trace, a, b)
			}
		}
		trace = append(trace, cur)
		prev = cur
	}
	return whole()
}

func backtrack(trace [][]int, a, b []string) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		get := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := get(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, edit{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if x == px {
			rev = append(rev, edit{'+', b[y-1]})
		} else {
			rev = append(rev, edit{'-', a[x-1]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, edit{' ', a[x-1]})
		x, y = x-1, y-1
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
