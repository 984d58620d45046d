package cloud

import (
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Paging through 60 items held by a provider with page sizes 25 to 50, at every size the contract
// allows a caller to ask, returns each item exactly once.
func TestWindowCoversEverythingOnce(t *testing.T) {
	provider := make([]int, 60)
	for i := range provider {
		provider[i] = i
	}
	fetch := func(page, per int) []int {
		start := min((page-1)*per, len(provider))
		return provider[start:min(start+per, len(provider))]
	}
	for _, size := range []int{0, 1, 2, 7, 25, 26, 49, 50, 100} {
		var got []int
		token := ""
		for range 200 {
			w, err := WindowFor(ListRequest{PageSize: size, PageToken: token}, 25, 50, 30)
			if err != nil {
				t.Fatal(err)
			}
			items := Cut(w, fetch(w.Page, w.PerPage))
			if size > 0 && len(items) > size {
				t.Fatalf("size %d: a page of %d", size, len(items))
			}
			got = append(got, items...)
			if token = w.Next(len(items), len(provider)); token == "" {
				break
			}
		}
		if !slices.Equal(got, provider) {
			t.Errorf("size %d: paged %v", size, got)
		}
	}
}

func TestWindowRefusesForeignTokens(t *testing.T) {
	for _, tok := range []string{"12", "o-1", "ox", "lexicon-not-a-token", "o99999999999"} {
		if _, err := WindowFor(ListRequest{PageToken: tok}, 1, 50, 20); !errcode.Has(err, errcode.CloudInvalid) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}
