package caps

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestUnifiedDiffPatches: on random texts the diff, applied to the old text, gives the new one, and
// it is minimal (as many changed lines as the longest common subsequence leaves).
func TestUnifiedDiffPatches(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		a, b := randomText(r), randomText(r)
		d := unifiedDiff("/etc/x", a, b)
		if a == b {
			if d != "" {
				t.Fatalf("equal texts gave a diff: %q", d)
			}
			continue
		}
		got, changed, err := patch(a, d)
		if err != nil || got != b {
			t.Fatalf("case %d: %v\na=%q\nb=%q\ndiff:\n%s\ngot %q", i, err, a, b, d, got)
		}
		al, bl := splitLines(a), splitLines(b)
		if want := len(al) + len(bl) - 2*lcs(al, bl); changed != want {
			t.Fatalf("case %d: %d changed lines, a minimal diff has %d\n%s", i, changed, want, d)
		}
	}
}

// TestUnifiedDiffLikeGNU: where the shortest edit is unambiguous, the diff is GNU diff -u's, byte for
// byte.
func TestUnifiedDiffLikeGNU(t *testing.T) {
	var a, b strings.Builder
	for i := 1; i <= 30; i++ {
		a.WriteString("line " + strconv.Itoa(i) + "\n")
		switch i {
		case 5:
			b.WriteString("line five\n")
		case 20:
		default:
			b.WriteString("line " + strconv.Itoa(i) + "\n")
		}
	}
	b.WriteString("end")
	dir := t.TempDir()
	write(t, dir+"/a", a.String())
	write(t, dir+"/b", b.String())
	out, _ := exec.Command("diff", "-u", "--label", "a/etc/x", "--label", "b/etc/x", dir+"/a", dir+"/b").Output()
	if len(out) == 0 {
		t.Fatal("diff gave nothing: is diffutils installed?")
	}
	if got := unifiedDiff("/etc/x", a.String(), b.String()); got != string(out) {
		t.Fatalf("ours:\n%s\nGNU:\n%s", got, out)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := writeFileString(p, s); err != nil {
		t.Fatal(err)
	}
}

func randomText(r *rand.Rand) string {
	n := r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteString(string(rune('a' + r.IntN(4))))
		b.WriteString("\n")
	}
	s := b.String()
	if s != "" && r.IntN(4) == 0 {
		s = s[:len(s)-1] // no newline at the end
	}
	return s
}

// patch applies a unified diff to a and counts its changed lines.
func patch(a, d string) (string, int, error) {
	al := splitLines(a)
	lines := strings.SplitAfter(d, "\n")
	var out []string
	pos, changed := 0, 0
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		switch l[0] {
		case '@':
			f := strings.Fields(l)
			start, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			s, _ := strconv.Atoi(start)
			if !strings.Contains(f[1], ",") || !strings.HasSuffix(f[1], ",0") {
				s--
			}
			out = append(out, al[pos:s]...)
			pos = s
		case ' ':
			out = append(out, al[pos])
			pos++
		case '-':
			pos++
			changed++
		case '+':
			body := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\") {
				body = strings.TrimSuffix(body, "\n")
			}
			out = append(out, body)
			changed++
		case '\\':
			if len(out) > 0 && lines[i-1][0] == ' ' {
				out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], "\n")
			}
		}
	}
	out = append(out, al[pos:]...)
	return strings.Join(out, ""), changed, nil
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func writeFileString(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
