package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCloudflare is a stand-in for Cloudflare's API v4, built from its documented request and response
// shapes: the success/errors/result/result_info envelope, page and per_page pagination, Bearer token
// auth, error bodies with Cloudflare's codes, and 429 answers with Retry-After.
type fakeCloudflare struct {
	mu         sync.Mutex
	token      string
	zones      []zone
	records    map[string][]fakeRecord // by zone id
	maxPerPage int                     // the server's cap on per_page, small to force several pages
	rateLimit  int                     // the next n requests are answered 429
	echoToken  bool                    // refuse creates with a message quoting the Authorization header
	requests   int
}

type fakeRecord struct {
	record
	ZoneID    string    `json:"zone_id"`
	ZoneName  string    `json:"zone_name"`
	Proxiable bool      `json:"proxiable"`
	CreatedOn time.Time `json:"created_on"`
}

func newFake(t *testing.T, token string, zones ...string) (*fakeCloudflare, string) {
	t.Helper()
	f := &fakeCloudflare{token: token, records: map[string][]fakeRecord{}, maxPerPage: 3}
	for _, z := range zones {
		id := randomID()
		f.zones = append(f.zones, zone{ID: id, Name: z, Status: "active"})
		f.records[id] = []fakeRecord{
			{record: record{ID: randomID(), Type: "SOA", Name: z, Content: "ns1." + z + " hostmaster." + z + " 1 10000 2400 604800 3600", TTL: 3600}},
			{record: record{ID: randomID(), Type: "NS", Name: z, Content: "ns1.cloudflare.example", TTL: 86400}},
		}
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/client/v4"
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type cfError struct {
	status int
	code   int
	msg    string
}

func (f *fakeCloudflare) fail(w http.ResponseWriter, e cfError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"success": false, "errors": []map[string]any{{"code": e.code, "message": e.msg}}, "messages": []any{}, "result": nil,
	})
}

func (f *fakeCloudflare) ok(w http.ResponseWriter, result any, info *resultInfo) {
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": result}
	if info != nil {
		body["result_info"] = info
	}
	_ = json.NewEncoder(w).Encode(body)
}

// page cuts list by the page and per_page query parameters, as Cloudflare does (page from 1).
func page[T any](f *fakeCloudflare, r *http.Request, list []T) ([]T, *resultInfo) {
	p, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pp, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if p < 1 {
		p = 1
	}
	if pp < 1 || pp > f.maxPerPage {
		pp = f.maxPerPage
	}
	total := len(list)
	pages := (total + pp - 1) / pp
	start := min((p-1)*pp, total)
	end := min(start+pp, total)
	out := list[start:end]
	if out == nil {
		out = []T{}
	}
	return out, &resultInfo{Page: p, PerPage: pp, Count: len(out), TotalCount: total, TotalPages: pages}
}

func (f *fakeCloudflare) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.rateLimit > 0 {
		f.rateLimit--
		w.Header().Set("Retry-After", "0")
		f.fail(w, cfError{http.StatusTooManyRequests, 971, "Please wait and consider throttling your request speed"})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, cfError{http.StatusForbidden, 10000, "Authentication error"})
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/client/v4")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/zones":
		var list []zone
		for _, z := range f.zones {
			if name := r.URL.Query().Get("name"); name == "" || name == z.Name {
				list = append(list, z)
			}
		}
		out, info := page(f, r, list)
		f.ok(w, out, info)
	case len(parts) >= 3 && parts[0] == "zones" && parts[2] == "dns_records":
		zid := parts[1]
		zn := f.zoneName(zid)
		if zn == "" {
			f.fail(w, cfError{http.StatusNotFound, 7003, fmt.Sprintf("Could not route to %s, perhaps your object identifier is invalid?", path)})
			return
		}
		switch {
		case r.Method == http.MethodGet && len(parts) == 3:
			out, info := page(f, r, f.records[zid])
			f.ok(w, out, info)
		case r.Method == http.MethodPost && len(parts) == 3:
			f.create(w, r, zid, zn)
		case r.Method == http.MethodDelete && len(parts) == 4:
			for i, rec := range f.records[zid] {
				if rec.ID == parts[3] {
					f.records[zid] = append(f.records[zid][:i], f.records[zid][i+1:]...)
					f.ok(w, map[string]string{"id": rec.ID}, nil)
					return
				}
			}
			f.fail(w, cfError{http.StatusNotFound, 81044, "Record does not exist."})
		case r.Method == http.MethodPatch && len(parts) == 4:
			var patch struct {
				TTL *int `json:"ttl"`
			}
			if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
				f.fail(w, cfError{http.StatusBadRequest, 9207, "Request body is invalid."})
				return
			}
			for i, rec := range f.records[zid] {
				if rec.ID == parts[3] {
					if patch.TTL != nil {
						if !validTTL(*patch.TTL) {
							f.fail(w, cfError{http.StatusBadRequest, 9021, "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic."})
							return
						}
						f.records[zid][i].TTL = *patch.TTL
					}
					f.ok(w, f.records[zid][i], nil)
					return
				}
			}
			f.fail(w, cfError{http.StatusNotFound, 81044, "Record does not exist."})
		default:
			f.fail(w, cfError{http.StatusMethodNotAllowed, 10405, "Method not allowed"})
		}
	default:
		f.fail(w, cfError{http.StatusNotFound, 7000, "No route for that URI"})
	}
}

func (f *fakeCloudflare) zoneName(id string) string {
	for _, z := range f.zones {
		if z.ID == id {
			return z.Name
		}
	}
	return ""
}

func validTTL(ttl int) bool { return ttl == 1 || (ttl >= 60 && ttl <= 86400) }

func (f *fakeCloudflare) create(w http.ResponseWriter, r *http.Request, zid, zn string) {
	var in record
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		f.fail(w, cfError{http.StatusBadRequest, 9207, "Request body is invalid."})
		return
	}
	if f.echoToken {
		f.fail(w, cfError{http.StatusBadRequest, 9000, "DNS name is invalid (request was authorized by " + r.Header.Get("Authorization") + ")"})
		return
	}
	if in.Name != zn && !strings.HasSuffix(in.Name, "."+zn) {
		f.fail(w, cfError{http.StatusBadRequest, 9000, "DNS name is invalid."})
		return
	}
	if !validTTL(in.TTL) {
		f.fail(w, cfError{http.StatusBadRequest, 9021, "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic."})
		return
	}
	rec := fakeRecord{record: in, ZoneID: zid, ZoneName: zn, CreatedOn: time.Now().UTC()}
	rec.ID = randomID()
	switch in.Type {
	case "A":
		if ip := net.ParseIP(in.Content); ip == nil || ip.To4() == nil {
			f.fail(w, cfError{http.StatusBadRequest, 9005, "Content for A record is invalid. Must be a valid IPv4 address"})
			return
		}
		rec.Proxiable = true
	case "AAAA":
		if ip := net.ParseIP(in.Content); ip == nil || ip.To4() != nil {
			f.fail(w, cfError{http.StatusBadRequest, 9006, "Content for AAAA record is invalid. Must be a valid IPv6 address"})
			return
		}
		rec.Proxiable = true
	case "CNAME", "MX", "NS", "PTR":
		if in.Content == "" {
			f.fail(w, cfError{http.StatusBadRequest, 9007, "Content for " + in.Type + " record is invalid."})
			return
		}
		if in.Type == "MX" && in.Priority == nil {
			f.fail(w, cfError{http.StatusBadRequest, 9102, "MX records require a priority."})
			return
		}
	case "TXT":
		if len(in.Content) > 4096 {
			f.fail(w, cfError{http.StatusBadRequest, 9100, "Content for TXT record is too long."})
			return
		}
	case "SRV":
		var s srvData
		if json.Unmarshal(in.Data, &s) != nil || s.Target == "" {
			f.fail(w, cfError{http.StatusBadRequest, 9101, "SRV record data is invalid."})
			return
		}
		p := s.Priority
		rec.Priority, rec.Content = &p, fmt.Sprintf("%d %d %s", s.Weight, s.Port, s.Target)
	case "CAA":
		var c caaData
		if json.Unmarshal(in.Data, &c) != nil || c.Tag == "" {
			f.fail(w, cfError{http.StatusBadRequest, 9101, "CAA record data is invalid."})
			return
		}
		rec.Content = fmt.Sprintf("%d %s %q", c.Flags, c.Tag, c.Value)
	default:
		f.fail(w, cfError{http.StatusBadRequest, 9004, "This record type is not supported."})
		return
	}
	for _, e := range f.records[zid] {
		if e.Name != in.Name {
			continue
		}
		if (e.Type == "CNAME") != (in.Type == "CNAME") || (e.Type == "CNAME" && in.Type == "CNAME") {
			f.fail(w, cfError{http.StatusBadRequest, 81053, "An A, AAAA, or CNAME record with that host already exists."})
			return
		}
		if e.Type == in.Type && e.Content == rec.Content && ptrEq(e.Priority, rec.Priority) {
			f.fail(w, cfError{http.StatusBadRequest, 81058, "An identical record already exists."})
			return
		}
	}
	f.records[zid] = append(f.records[zid], rec)
	f.ok(w, rec, nil)
}

func ptrEq(a, b *uint16) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
