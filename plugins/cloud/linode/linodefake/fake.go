// Package linodefake is an in-memory stand-in for Linode's API v4, built from its documented shapes, for the
// linode driver's tests and the plane's provisioning tests (which cannot import the driver's package main).
package linodefake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fake stands in for Linode's API v4, built from its documented shapes: Bearer token auth,
// paginated lists ({"data", "page", "pages", "results"} with page and page_size 25 to 500), error bodies
// ({"errors": [{"field", "reason"}]}), 429 answers with Retry-After, and instances that go from
// provisioning to running and back and forth with boot and shutdown.
type Fake struct {
	Mu        sync.Mutex
	token     string
	next      int
	Instances map[int]*Instance
	ips       map[string]string // address -> rdns
	nextIP    int
	RateLimit int // the next n requests are answered 429
	Limit     int // instances the account may hold (0: no limit)
}

// Instance is a Linode as the fake keeps it (and answers it).
type Instance struct {
	ID             int      `json:"id"`
	Label          string   `json:"label"`
	Region         string   `json:"region"`
	Type           string   `json:"type"`
	Image          string   `json:"image"`
	Status         string   `json:"status"`
	IPv4           []string `json:"ipv4"`
	IPv6           string   `json:"ipv6"`
	Tags           []string `json:"tags"`
	Created        string   `json:"created"`
	Updated        string   `json:"updated"`
	HasUserData    bool     `json:"has_user_data"`
	UserData       string   `json:"-"` // metadata.user_data as Linode decodes it, for tests to read back
	DiskEncryption string   `json:"disk_encryption"`
	Specs          struct {
		Disk, Memory, VCPUs, Transfer int
	} `json:"specs"`
	used int64
}

var (
	linodeRegions = []map[string]any{
		{"id": "us-east", "label": "Newark, NJ", "country": "us", "status": "ok", "capabilities": []string{"Linodes"}},
		{"id": "eu-central", "label": "Frankfurt, DE", "country": "de", "status": "ok", "capabilities": []string{"Linodes"}},
	}
	linodeTypes = []map[string]any{
		{"id": "g6-nanode-1", "label": "Nanode 1GB", "vcpus": 1, "memory": 1024, "disk": 25600, "transfer": 1000, "class": "nanode"},
		{"id": "g6-standard-2", "label": "Linode 4GB", "vcpus": 2, "memory": 4096, "disk": 81920, "transfer": 4000, "class": "standard"},
	}
	linodeImages  = []string{"linode/debian12", "linode/ubuntu24.04"}
	linodeLabelRE = regexp.MustCompile(`^[a-zA-Z0-9]([-_.]?[a-zA-Z0-9]+)*$`)
)

// New serves a fake that accepts token, until the test ends, and returns it with the base URL a driver
// takes as its endpoint.
func New(t testing.TB, token string) (*Fake, string) {
	t.Helper()
	f := &Fake{token: token, next: 40000000, Instances: map[int]*Instance{}, ips: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v4"
}

func (f *Fake) reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *Fake) fail(w http.ResponseWriter, status int, field, reason string) {
	e := map[string]string{"reason": reason}
	if field != "" {
		e["field"] = field
	}
	f.reply(w, status, map[string]any{"errors": []any{e}})
}

// list answers a paginated list the way Linode does.
func (f *Fake) list(w http.ResponseWriter, r *http.Request, data []any) {
	page, size := 1, 100
	if v := r.URL.Query().Get("page"); v != "" {
		page, _ = strconv.Atoi(v)
	}
	if v := r.URL.Query().Get("page_size"); v != "" {
		size, _ = strconv.Atoi(v)
		if size < 25 || size > 500 {
			f.fail(w, http.StatusBadRequest, "page_size", "Must be 25-500")
			return
		}
	}
	if page < 1 {
		f.fail(w, http.StatusBadRequest, "page", "Must be a positive integer")
		return
	}
	pages := max(1, (len(data)+size-1)/size)
	start := min((page-1)*size, len(data))
	out := data[start:min(start+size, len(data))]
	if out == nil {
		out = []any{}
	}
	f.reply(w, http.StatusOK, map[string]any{"data": out, "page": page, "pages": pages, "results": len(data)})
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.RateLimit > 0 {
		f.RateLimit--
		w.Header().Set("Retry-After", "0")
		f.fail(w, http.StatusTooManyRequests, "", "Too Many Requests")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, http.StatusUnauthorized, "", "Invalid Token")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v4")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/regions":
		f.list(w, r, anys(linodeRegions))
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "regions":
		for _, reg := range linodeRegions {
			if reg["id"] == parts[1] {
				f.reply(w, http.StatusOK, reg)
				return
			}
		}
		f.fail(w, http.StatusNotFound, "", "Not found")
	case r.Method == http.MethodGet && path == "/linode/types":
		f.list(w, r, anys(linodeTypes))
	case r.Method == http.MethodGet && path == "/account":
		f.reply(w, http.StatusOK, map[string]any{"first_name": "Lexicon", "last_name": "Tester", "company": "lexicon-test", "email": "ops@example.com", "balance": 0})
	case path == "/linode/instances" && r.Method == http.MethodGet:
		var ids []int
		for id := range f.Instances {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var data []any
		for _, id := range ids {
			data = append(data, f.Instances[id])
		}
		f.list(w, r, data)
	case path == "/linode/instances" && r.Method == http.MethodPost:
		f.create(w, r)
	case len(parts) >= 3 && parts[0] == "linode" && parts[1] == "instances":
		id, _ := strconv.Atoi(parts[2])
		in, ok := f.Instances[id]
		if !ok {
			f.fail(w, http.StatusNotFound, "", "Not found")
			return
		}
		switch {
		case len(parts) == 3 && r.Method == http.MethodGet:
			if in.Status == "provisioning" {
				in.Status = "running" // a later read finds it booted
			}
			f.reply(w, http.StatusOK, in)
		case len(parts) == 3 && r.Method == http.MethodDelete:
			delete(f.Instances, id)
			f.reply(w, http.StatusOK, map[string]any{})
		case len(parts) == 4 && r.Method == http.MethodPost && parts[3] == "boot":
			in.Status = "running"
			f.reply(w, http.StatusOK, map[string]any{})
		case len(parts) == 4 && r.Method == http.MethodPost && parts[3] == "shutdown":
			in.Status = "offline"
			f.reply(w, http.StatusOK, map[string]any{})
		case len(parts) == 4 && r.Method == http.MethodPost && parts[3] == "reboot":
			in.Status = "running"
			f.reply(w, http.StatusOK, map[string]any{})
		case len(parts) == 4 && r.Method == http.MethodGet && parts[3] == "transfer":
			f.reply(w, http.StatusOK, map[string]any{"used": in.used, "billable": 0, "quota": 1000})
		default:
			f.fail(w, http.StatusNotFound, "", "Not found")
		}
	case path == "/networking/ips/assign" && r.Method == http.MethodPost:
		f.assign(w, r)
	case len(parts) == 3 && parts[0] == "networking" && parts[1] == "ips" && r.Method == http.MethodPut:
		var body struct {
			RDNS *string `json:"rdns"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil {
			f.fail(w, http.StatusBadRequest, "", "Invalid JSON")
			return
		}
		owner := f.owner(parts[2])
		if owner == nil {
			f.fail(w, http.StatusNotFound, "", "Not found")
			return
		}
		if body.RDNS != nil {
			f.ips[parts[2]] = *body.RDNS
		}
		f.reply(w, http.StatusOK, map[string]any{"address": parts[2], "type": "ipv4", "public": true, "rdns": f.ips[parts[2]], "linode_id": owner.ID, "region": owner.Region})
	default:
		f.fail(w, http.StatusNotFound, "", "Not found")
	}
}

func anys[T any](list []T) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

// owner returns the instance holding a public address.
func (f *Fake) owner(addr string) *Instance {
	for _, in := range f.Instances {
		if slices.Contains(in.IPv4, addr) || strings.HasPrefix(in.IPv6, addr+"/") {
			return in
		}
	}
	return nil
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Region         string   `json:"region"`
		Type           string   `json:"type"`
		Label          string   `json:"label"`
		Image          string   `json:"image"`
		RootPass       string   `json:"root_pass"`
		AuthorizedKeys []string `json:"authorized_keys"`
		Tags           []string `json:"tags"`
		DiskEncryption string   `json:"disk_encryption"`
		Metadata       *struct {
			UserData string `json:"user_data"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.fail(w, http.StatusBadRequest, "", "Invalid JSON")
		return
	}
	switch {
	case !slices.ContainsFunc(linodeRegions, func(m map[string]any) bool { return m["id"] == body.Region }):
		f.fail(w, http.StatusBadRequest, "region", "region is not valid")
		return
	case !slices.ContainsFunc(linodeTypes, func(m map[string]any) bool { return m["id"] == body.Type }):
		f.fail(w, http.StatusBadRequest, "type", "A valid plan type by that ID was not found")
		return
	case !slices.Contains(linodeImages, body.Image):
		f.fail(w, http.StatusBadRequest, "image", "image is not valid")
		return
	case body.RootPass == "":
		f.fail(w, http.StatusBadRequest, "root_pass", "root_pass is required when deploying an image")
		return
	case len(body.Label) < 3 || len(body.Label) > 64 || !linodeLabelRE.MatchString(body.Label):
		f.fail(w, http.StatusBadRequest, "label", "Label must be 3-64 characters, begin and end with a letter or number, and contain only letters, numbers, dashes, underscores and periods")
		return
	case body.DiskEncryption != "" && body.DiskEncryption != "enabled" && body.DiskEncryption != "disabled":
		f.fail(w, http.StatusBadRequest, "disk_encryption", "Must be enabled or disabled")
		return
	case f.Limit > 0 && len(f.Instances) >= f.Limit:
		f.fail(w, http.StatusBadRequest, "", "You have reached the limit of Linodes allowed on your account")
		return
	}
	for _, in := range f.Instances {
		if in.Label == body.Label {
			f.fail(w, http.StatusBadRequest, "label", "Label must be unique among your linodes")
			return
		}
	}
	// Linode's API: user data is base64 in metadata.user_data, at most 16 KiB decoded; a tag is 3 to 50
	// characters.
	var userData []byte
	if body.Metadata != nil {
		var err error
		if userData, err = base64.StdEncoding.DecodeString(body.Metadata.UserData); err != nil {
			f.fail(w, http.StatusBadRequest, "metadata.user_data", "user_data must be base64 encoded")
			return
		}
		if len(userData) > 16<<10 {
			f.fail(w, http.StatusBadRequest, "metadata.user_data", "user_data must be 16KB or less")
			return
		}
	}
	for _, tag := range body.Tags {
		if len(tag) < 3 || len(tag) > 50 {
			f.fail(w, http.StatusBadRequest, "tags", "Length must be 3-50 characters")
			return
		}
	}
	f.next++
	f.nextIP++
	now := time.Now().UTC().Format("2006-01-02T15:04:05")
	in := &Instance{
		ID: f.next, Label: body.Label, Region: body.Region, Type: body.Type, Image: body.Image, Status: "provisioning",
		IPv4: []string{fmt.Sprintf("192.0.2.%d", f.nextIP), fmt.Sprintf("192.168.128.%d", f.nextIP)},
		IPv6: fmt.Sprintf("2001:db8::%x/128", f.nextIP), Tags: body.Tags, Created: now, Updated: now,
		HasUserData: body.Metadata != nil, UserData: string(userData), DiskEncryption: body.DiskEncryption, used: int64(f.nextIP) << 20,
	}
	if in.Tags == nil {
		in.Tags = []string{}
	}
	if in.DiskEncryption == "" {
		in.DiskEncryption = "enabled"
	}
	f.Instances[in.ID] = in
	f.reply(w, http.StatusOK, in)
}

// assign moves addresses between Linodes of one region (POST /networking/ips/assign), running or not.
func (f *Fake) assign(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Region      string `json:"region"`
		Assignments []struct {
			Address  string `json:"address"`
			LinodeID int    `json:"linode_id"`
		} `json:"assignments"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.fail(w, http.StatusBadRequest, "", "Invalid JSON")
		return
	}
	type move struct {
		from, to *Instance
		addr     string
	}
	var moves []move
	for _, a := range body.Assignments {
		to, ok := f.Instances[a.LinodeID]
		from := f.owner(a.Address)
		if !ok || from == nil {
			f.fail(w, http.StatusBadRequest, "assignments", "Invalid assignment")
			return
		}
		if to.Region != body.Region || from.Region != body.Region {
			f.fail(w, http.StatusBadRequest, "region", "All Linodes must be in the given region")
			return
		}
		moves = append(moves, move{from, to, a.Address})
	}
	for _, m := range moves {
		m.from.IPv4 = slices.DeleteFunc(m.from.IPv4, func(s string) bool { return s == m.addr })
	}
	for _, m := range moves {
		m.to.IPv4 = append([]string{m.addr}, m.to.IPv4...)
	}
	f.reply(w, http.StatusOK, map[string]any{})
}
