package cloud

import (
	"strconv"
	"strings"
)

// Page tokens for providers that page by number (page=N, per_page=M). The contract's token is opaque;
// drivers built on Window make it the offset of the next instance, so that any page size the caller
// asks maps onto whatever page sizes the provider allows.

// Window is where one ListRequest falls among a provider's numbered pages: fetch page Page (1-based)
// of PerPage, drop its first Skip items and keep at most Take.
type Window struct {
	Page, PerPage, Skip, Take int
	offset                    int
}

// tokenPrefix marks the offset tokens Window makes.
const tokenPrefix = "o"

// WindowFor maps req onto a provider whose page sizes run from minPer to maxPer; defaultSize is the
// page size when req gives none. A token this scheme did not make is cloud.invalid.
func WindowFor(req ListRequest, minPer, maxPer, defaultSize int) (Window, error) {
	if err := req.Validate(); err != nil {
		return Window{}, err
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.PageToken, tokenPrefix))
		if !strings.HasPrefix(req.PageToken, tokenPrefix) || err != nil || n < 0 || n > 1<<30 {
			return Window{}, invalid("page_token", "page token %q is not one this driver gave", req.PageToken)
		}
		offset = n
	}
	take := req.PageSize
	if take == 0 {
		take = defaultSize
	}
	per := min(max(take, minPer), maxPer)
	take = min(take, per)
	return Window{Page: offset/per + 1, PerPage: per, Skip: offset % per, Take: take, offset: offset}, nil
}

// Cut returns the part of a fetched page the request asked for.
func Cut[T any](w Window, page []T) []T {
	if w.Skip >= len(page) {
		return nil
	}
	return page[w.Skip:min(w.Skip+w.Take, len(page))]
}

// Next returns the token of the page after one that returned n items, given the provider's total
// count; "" when there is nothing after it.
func (w Window) Next(n, total int) string {
	if next := w.offset + n; n > 0 && next < total {
		return tokenPrefix + strconv.Itoa(next)
	}
	return ""
}
