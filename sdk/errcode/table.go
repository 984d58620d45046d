package errcode

import (
	"slices"
	"strings"
	"sync"
)

// Spec is what one code means for the caller.
type Spec struct {
	// Code is the code itself, area.reason.
	Code string
	// Status is the HTTP status the plane answers with when it returns the code.
	Status int
	// Change says whether the request that got this code changed anything.
	Change Change
}

// Change says whether a request that failed with a code changed anything. The code's own documentation
// says what, where it is more than "nothing".
type Change uint8

const (
	// Unchanged: nothing changed; the request may be sent again as it was.
	Unchanged Change = iota + 1
	// MaybeChanged: the request may have taken effect in whole or in part (a driver lost mid-call, a
	// commit whose answer was lost, a word stopped after using capabilities). Look before retrying.
	MaybeChanged
	// PartlyChanged: part of the request was carried out and the rest was not, as the code's
	// documentation says (a case recorded without what was over the caps).
	PartlyChanged
)

func (c Change) String() string {
	switch c {
	case Unchanged:
		return "unchanged"
	case MaybeChanged:
		return "maybe_changed"
	case PartlyChanged:
		return "partly_changed"
	}
	return "unknown"
}

// Area is one area of codes (the part before the dot) and the codes declared in it.
type Area struct {
	Name string
	// Reserved areas are Lexicon's alone: a word (or recipe) that reports a code of a reserved area as
	// its own failure fails as word.failed instead, so a module cannot pass for the host, the agent or
	// the plane. capability and recipe are open because the word SDK reports them from inside the
	// module: a capability answer passed on, a check that gave no verdict.
	Reserved bool
	Codes    []Spec
}

// HTTP statuses, as plain numbers: words import this package and are built for wasip1, and importing
// net/http (which does build there) would link its package initialisation into every word for the sake
// of a dozen constants. The names follow net/http's.
const (
	statusBadRequest       = 400
	statusUnauthorized     = 401
	statusForbidden        = 403
	statusNotFound         = 404
	statusMethodNotAllowed = 405
	statusConflict         = 409
	statusTooLarge         = 413 // StatusRequestEntityTooLarge
	statusUnprocessable    = 422 // StatusUnprocessableEntity
	statusTooManyRequests  = 429
	statusInternal         = 500 // StatusInternalServerError
	statusBadGateway       = 502
	statusUnavailable      = 503 // StatusServiceUnavailable
	statusGatewayTimeout   = 504
)

// areas lists every area file's table. A code declared as a constant and missing here fails the
// package's tests.
var areas = []*Area{
	&areaAccount, &areaAgent, &areaArtifact, &areaAuth, &areaBackup, &areaCapability, &areaCase, &areaChannel, &areaCloud,
	&areaContract, &areaDNS, &areaDriver, &areaFootprint, &areaIncident, &areaInternal, &areaIO, &areaJob, &areaJoin,
	&areaKey, &areaLease, &areaLog, &areaMachine, &areaManifest, &areaModule, &areaNode, &areaNotification, &areaPkg, &areaPlane, &areaPolicy, &areaProvision,
	&areaRebuild, &areaRecipe, &areaRelease, &areaReplica, &areaRequest, &areaRole, &areaRollout, &areaRoute, &areaSSO, &areaSchedule, &areaSecurity, &areaStatement, &areaStore,
	&areaToken,
	&areaUsage, &areaWebhook, &areaWord,
}

// The indexes are built on first use, not at package initialisation: every word links this package,
// and a map of every code built at start was most of what the word SDK added to a word's start
// (issue 29). A word that never fails or asks about a code never builds them.
var (
	table     = sync.OnceValue(indexCodes)
	areaIndex = sync.OnceValue(indexAreas)
)

func indexCodes() map[string]Spec {
	m := map[string]Spec{}
	for _, a := range areas {
		for _, s := range a.Codes {
			m[s.Code] = s
		}
	}
	return m
}

func indexAreas() map[string]*Area {
	m := map[string]*Area{}
	for _, a := range areas {
		m[a.Name] = a
	}
	return m
}

// Lookup returns what code means, and false when Lexicon declares no such code (a word's own code, or
// one from a newer or older release).
func Lookup(code string) (Spec, bool) {
	s, ok := table()[code]
	return s, ok
}

// Status returns the HTTP status for code. A code the table does not hold is 500: the plane answering
// with a code it does not declare is its own failure.
func Status(code string) int {
	if s, ok := table()[code]; ok {
		return s.Status
	}
	return statusInternal
}

// ReservedArea reports whether area is one only Lexicon may report (see Area.Reserved). An area the
// table does not know is a word's own.
func ReservedArea(area string) bool {
	a, ok := areaIndex()[area]
	return ok && a.Reserved
}

// Reserved reports whether code's area is reserved for Lexicon.
func Reserved(code string) bool {
	area, _, _ := strings.Cut(code, ".")
	return ReservedArea(area)
}

// KnownArea reports whether area is one of Lexicon's areas, reserved or not.
func KnownArea(area string) bool {
	_, ok := areaIndex()[area]
	return ok
}

// All returns every declared code's spec, sorted by code.
func All() []Spec {
	all := make([]Spec, 0, len(table()))
	for _, s := range table() {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b Spec) int { return strings.Compare(a.Code, b.Code) })
	return all
}

// Areas returns every area, sorted by name, with its codes. The slices are copies.
func Areas() []Area {
	out := make([]Area, 0, len(areas))
	for _, a := range areas {
		out = append(out, Area{Name: a.Name, Reserved: a.Reserved, Codes: slices.Clone(a.Codes)})
	}
	slices.SortFunc(out, func(a, b Area) int { return strings.Compare(a.Name, b.Name) })
	return out
}
