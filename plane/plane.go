// Package plane is the management plane: it enrols nodes, routes jobs by the vocabulary each node
// reports, runs drivers, and turns what nodes say into incidents, without ever holding a shell.
//
// Operations: each replica serves its metrics in the Prometheus text format on GET /api/v1/admin/metrics
// (any admin token, viewer or above), and, with lexicon-plane serve --metrics-listen ADDR, on
// http://ADDR/metrics without a token (for a scraper on a loopback or private address). The series are
// listed in plane/internal/metrics; GET /healthz answers whether the replica reaches its store.
package plane

// Version is the plane's release version, stamped by the Makefile's builds from the VERSION file
// (-ldflags -X); a plain `go build` leaves it empty and the plane names itself from its build info.
var Version = ""
