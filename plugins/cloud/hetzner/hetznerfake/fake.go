// Package hetznerfake is an in-memory stand-in for Hetzner Cloud's API, built from its documented shapes, for the
// hetzner driver's tests and the plane's provisioning tests (which cannot import the driver's package main).
package hetznerfake

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fake stands in for the Hetzner Cloud API v1, built from its documented shapes: Bearer token
// auth, lists under a named key with meta.pagination (page, per_page up to 50, next_page, last_page,
// total_entries), errors as {"error": {"code", "message", "details"}}, 429 rate_limit_exceeded, actions
// for everything that changes a server, SSH keys by id, and primary IPs that move only between
// powered-off servers.
type Fake struct {
	Mu        sync.Mutex
	token     string
	seq       int64
	Servers   map[int64]*Server
	Keys      []map[string]any
	IPs       map[int64]*PrimaryIP // primary IPv4s
	RateLimit int
	Limit     int
}

// Server is a server as the fake keeps it.
type Server struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Status  string            `json:"status"`
	Created string            `json:"created"`
	Labels  map[string]string `json:"labels"`
	// UserData is user_data as the server received it, for tests to read back.
	UserData string            `json:"-"`
	Type     map[string]any    `json:"-"`
	Loc      map[string]any    `json:"-"`
	Image    string            `json:"-"`
	IPv4     int64             `json:"-"` // primary IP id, 0 when none
	IPv6     string            `json:"-"`
	PTR      map[string]string `json:"-"`
	Out      uint64            `json:"-"`
}

// PrimaryIP is a primary IPv4 and the server it is assigned to.
type PrimaryIP struct {
	ID       int64
	IP       string
	Assignee int64
}

var (
	hzLocations = []map[string]any{
		{"id": 1, "name": "fsn1", "description": "Falkenstein DC Park 1", "country": "DE", "city": "Falkenstein", "network_zone": "eu-central"},
		{"id": 2, "name": "nbg1", "description": "Nuremberg DC Park 1", "country": "DE", "city": "Nuremberg", "network_zone": "eu-central"},
		{"id": 4, "name": "ash", "description": "Ashburn, VA", "country": "US", "city": "Ashburn, VA", "network_zone": "us-east"},
	}
	hzTypes = []map[string]any{
		{"id": 104, "name": "cx22", "description": "CX22", "cores": 2, "memory": 4.0, "disk": 40, "storage_type": "local", "cpu_type": "shared", "architecture": "x86",
			"locations": []map[string]any{{"id": 1, "name": "fsn1", "available": true}, {"id": 2, "name": "nbg1", "available": true}}},
		{"id": 96, "name": "cpx11", "description": "CPX 11", "cores": 2, "memory": 2.0, "disk": 40, "storage_type": "local", "cpu_type": "shared", "architecture": "x86",
			"locations": []map[string]any{{"id": 4, "name": "ash", "available": true}, {"id": 1, "name": "fsn1", "available": true}}},
	}
	hzImages = []string{"debian-12", "ubuntu-24.04"}
	hzName   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	hzLabel  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
)

// New serves a fake that accepts token, until the test ends, and returns it with the base URL a driver
// takes as its endpoint.
func New(t testing.TB, token string) (*Fake, string) {
	t.Helper()
	f := &Fake{token: token, seq: 1000, Servers: map[int64]*Server{}, IPs: map[int64]*PrimaryIP{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func (f *Fake) reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *Fake) fail(w http.ResponseWriter, status int, code, msg string) {
	f.reply(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg, "details": map[string]any{}}})
}

func (f *Fake) invalid(w http.ResponseWriter, field, msg string) {
	f.reply(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": "invalid_input", "message": "invalid input in field '" + field + "'",
		"details": map[string]any{"fields": []map[string]any{{"name": field, "messages": []string{msg}}}}}})
}

// list answers a paginated list under key, as the API does.
func (f *Fake) list(w http.ResponseWriter, r *http.Request, key string, items []any) {
	page, per := 1, 25
	if v := r.URL.Query().Get("page"); v != "" {
		page, _ = strconv.Atoi(v)
	}
	if v := r.URL.Query().Get("per_page"); v != "" {
		per, _ = strconv.Atoi(v)
	}
	if page < 1 || per < 1 || per > 50 {
		f.invalid(w, "per_page", "must be between 1 and 50")
		return
	}
	total := len(items)
	last := max(1, (total+per-1)/per)
	start := min((page-1)*per, total)
	out := items[start:min(start+per, total)]
	if out == nil {
		out = []any{}
	}
	pag := map[string]any{"page": page, "per_page": per, "last_page": last, "total_entries": total, "previous_page": nil, "next_page": nil}
	if page > 1 {
		pag["previous_page"] = page - 1
	}
	if page < last {
		pag["next_page"] = page + 1
	}
	f.reply(w, http.StatusOK, map[string]any{key: out, "meta": map[string]any{"pagination": pag}})
}

func (f *Fake) action(command string, resources ...int64) map[string]any {
	f.seq++
	var res []map[string]any
	for _, id := range resources {
		res = append(res, map[string]any{"id": id, "type": "server"})
	}
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{"id": f.seq, "command": command, "status": "success", "progress": 100, "started": now, "finished": now, "error": nil, "resources": res}
}

func (f *Fake) serverJSON(s *Server) map[string]any {
	ipv4 := any(nil)
	if ip, ok := f.IPs[s.IPv4]; ok {
		ipv4 = map[string]any{"id": ip.ID, "ip": ip.IP, "blocked": false, "dns_ptr": s.PTR[ip.IP]}
	}
	return map[string]any{
		"id": s.ID, "name": s.Name, "status": s.Status, "created": s.Created, "labels": s.Labels,
		"public_net":  map[string]any{"ipv4": ipv4, "ipv6": map[string]any{"id": s.ID + 500000, "ip": s.IPv6, "blocked": false, "dns_ptr": []any{}}, "floating_ips": []any{}, "firewalls": []any{}},
		"private_net": []any{}, "server_type": s.Type, "location": s.Loc,
		"image":            map[string]any{"id": 114690387, "name": s.Image, "type": "system", "status": "available", "os_flavor": "debian"},
		"included_traffic": uint64(20) << 40, "outgoing_traffic": s.Out, "ingoing_traffic": 0,
		"protection": map[string]any{"delete": false, "rebuild": false}, "volumes": []any{}, "load_balancers": []any{},
		"primary_disk_size": 40, "rescue_enabled": false, "locked": false, "backup_window": nil, "iso": nil, "placement_group": nil,
	}
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.RateLimit > 0 {
		f.RateLimit--
		w.Header().Set("RateLimit-Limit", "3600")
		w.Header().Set("RateLimit-Remaining", "0")
		w.Header().Set("RateLimit-Reset", strconv.FormatInt(time.Now().Unix()+1, 10))
		f.fail(w, http.StatusTooManyRequests, "rate_limit_exceeded", "limit of 3600 requests per hour reached")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, http.StatusUnauthorized, "unauthorized", "unable to authenticate")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && path == "/locations":
		var items []any
		for _, l := range hzLocations {
			if n := q.Get("name"); n == "" || n == l["name"] {
				items = append(items, l)
			}
		}
		f.list(w, r, "locations", items)
	case r.Method == http.MethodGet && path == "/server_types":
		f.list(w, r, "server_types", anys(hzTypes))
	case r.Method == http.MethodGet && path == "/ssh_keys":
		var items []any
		for _, k := range f.Keys {
			if fp := q.Get("fingerprint"); fp == "" || fp == k["fingerprint"] {
				items = append(items, k)
			}
		}
		f.list(w, r, "ssh_keys", items)
	case r.Method == http.MethodPost && path == "/ssh_keys":
		var body struct {
			Name      string            `json:"name"`
			PublicKey string            `json:"public_key"`
			Labels    map[string]string `json:"labels"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		fp, err := keyFingerprint(body.PublicKey)
		if err != nil {
			f.invalid(w, "public_key", "invalid public key")
			return
		}
		for _, k := range f.Keys {
			if k["fingerprint"] == fp || k["name"] == body.Name {
				f.fail(w, http.StatusConflict, "uniqueness_error", "SSH key with the same fingerprint already exists")
				return
			}
		}
		f.seq++
		key := map[string]any{"id": f.seq, "name": body.Name, "fingerprint": fp, "public_key": body.PublicKey, "labels": body.Labels, "created": time.Now().UTC().Format(time.RFC3339)}
		f.Keys = append(f.Keys, key)
		f.reply(w, http.StatusCreated, map[string]any{"ssh_key": key})
	case r.Method == http.MethodGet && path == "/servers":
		var ids []int64
		for id := range f.Servers {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var items []any
		for _, id := range ids {
			items = append(items, f.serverJSON(f.Servers[id]))
		}
		f.list(w, r, "servers", items)
	case r.Method == http.MethodPost && path == "/servers":
		f.create(w, r)
	case len(parts) >= 2 && parts[0] == "servers":
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		s, ok := f.Servers[id]
		if !ok {
			f.fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("server with ID '%s' not found", parts[1]))
			return
		}
		switch {
		case len(parts) == 2 && r.Method == http.MethodGet:
			if s.Status == "initializing" {
				s.Status = "running"
			}
			f.reply(w, http.StatusOK, map[string]any{"server": f.serverJSON(s)})
		case len(parts) == 2 && r.Method == http.MethodDelete:
			delete(f.IPs, s.IPv4)
			delete(f.Servers, id)
			f.reply(w, http.StatusOK, map[string]any{"action": f.action("delete_server", id)})
		case len(parts) == 4 && parts[2] == "actions" && r.Method == http.MethodPost:
			f.serverAction(w, r, s, parts[3])
		default:
			f.fail(w, http.StatusNotFound, "not_found", "not found")
		}
	case len(parts) == 4 && parts[0] == "primary_ips" && parts[2] == "actions" && r.Method == http.MethodPost:
		f.primaryIPAction(w, r, parts[1], parts[3])
	default:
		f.fail(w, http.StatusNotFound, "not_found", "not found")
	}
}

func anys[T any](list []T) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name             string            `json:"name"`
		ServerType       json.RawMessage   `json:"server_type"`
		Image            json.RawMessage   `json:"image"`
		Location         string            `json:"location"`
		SSHKeys          []int64           `json:"ssh_keys"`
		UserData         string            `json:"user_data"`
		Labels           map[string]string `json:"labels"`
		StartAfterCreate *bool             `json:"start_after_create"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.fail(w, http.StatusBadRequest, "json_error", "invalid JSON")
		return
	}
	var typeName, image string
	_ = json.Unmarshal(body.ServerType, &typeName)
	_ = json.Unmarshal(body.Image, &image)
	if !hzName.MatchString(body.Name) || len(body.Name) > 63 {
		f.invalid(w, "name", "must be a valid hostname")
		return
	}
	i := slices.IndexFunc(hzTypes, func(t map[string]any) bool { return t["name"] == typeName })
	if i < 0 {
		f.fail(w, http.StatusNotFound, "not_found", "server type not found")
		return
	}
	j := slices.IndexFunc(hzLocations, func(l map[string]any) bool { return l["name"] == body.Location })
	if j < 0 {
		f.invalid(w, "location", "location not found")
		return
	}
	if !slices.Contains(hzImages, image) {
		f.invalid(w, "image", "image not found")
		return
	}
	// Hetzner's API: user_data is cloud-init text of at most 32 KiB; a label's key is an optional DNS
	// prefix and a name of at most 63 alphanumerics, '-', '_' and '.', beginning and ending
	// alphanumeric, its value the same or empty.
	if len(body.UserData) > 32<<10 {
		f.invalid(w, "user_data", "user_data is too long")
		return
	}
	for k, v := range body.Labels {
		name := k
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			name = k[i+1:]
		}
		if !hzLabel.MatchString(name) || (v != "" && !hzLabel.MatchString(v)) {
			f.invalid(w, "labels", fmt.Sprintf("label %q=%q is invalid", k, v))
			return
		}
	}
	for _, k := range body.SSHKeys {
		if !slices.ContainsFunc(f.Keys, func(m map[string]any) bool { return m["id"] == k }) {
			f.invalid(w, "ssh_keys", fmt.Sprintf("SSH key %d not found", k))
			return
		}
	}
	for _, s := range f.Servers {
		if s.Name == body.Name {
			f.fail(w, http.StatusConflict, "uniqueness_error", "server name is already used")
			return
		}
	}
	if f.Limit > 0 && len(f.Servers) >= f.Limit {
		f.fail(w, http.StatusForbidden, "resource_limit_exceeded", "server limit exceeded")
		return
	}
	f.seq++
	id := f.seq
	f.seq++
	ip := &PrimaryIP{ID: f.seq, IP: fmt.Sprintf("198.51.100.%d", len(f.IPs)+1), Assignee: id}
	f.IPs[ip.ID] = ip
	labels := body.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	s := &Server{
		ID: id, Name: body.Name, Status: "initializing", Created: time.Now().UTC().Format(time.RFC3339), Labels: labels, UserData: body.UserData,
		Type: hzTypes[i], Loc: hzLocations[j], Image: image, IPv4: ip.ID, IPv6: fmt.Sprintf("2001:db8:%x::/64", id), PTR: map[string]string{}, Out: uint64(id) << 20,
	}
	f.Servers[id] = s
	f.reply(w, http.StatusCreated, map[string]any{"server": f.serverJSON(s), "action": f.action("create_server", id), "next_actions": []any{f.action("start_server", id)}, "root_password": nil})
}

func (f *Fake) serverAction(w http.ResponseWriter, r *http.Request, s *Server, action string) {
	switch action {
	case "poweron":
		s.Status = "running"
	case "poweroff":
		s.Status = "off"
	case "reboot":
		s.Status = "running"
	case "change_dns_ptr":
		var body struct {
			IP     string  `json:"ip"`
			DNSPtr *string `json:"dns_ptr"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		v6 := netip.MustParsePrefix(s.IPv6)
		addr, err := netip.ParseAddr(body.IP)
		if ip, ok := f.IPs[s.IPv4]; err != nil || (!(ok && ip.IP == body.IP) && !v6.Contains(addr)) {
			f.invalid(w, "ip", "ip is not assigned to this server")
			return
		}
		if body.DNSPtr != nil {
			s.PTR[body.IP] = *body.DNSPtr
		}
	default:
		f.fail(w, http.StatusNotFound, "not_found", "action not found")
		return
	}
	f.reply(w, http.StatusCreated, map[string]any{"action": f.action(action, s.ID)})
}

func (f *Fake) primaryIPAction(w http.ResponseWriter, r *http.Request, idText, action string) {
	id, _ := strconv.ParseInt(idText, 10, 64)
	ip, ok := f.IPs[id]
	if !ok {
		f.fail(w, http.StatusNotFound, "not_found", "primary IP not found")
		return
	}
	switch action {
	case "unassign":
		if ip.Assignee == 0 {
			f.fail(w, http.StatusConflict, "conflict", "primary IP is not assigned")
			return
		}
		if s := f.Servers[ip.Assignee]; s != nil {
			if s.Status != "off" {
				f.fail(w, http.StatusConflict, "server_not_stopped", "server must be powered off")
				return
			}
			s.IPv4 = 0
		}
		ip.Assignee = 0
	case "assign":
		var body struct {
			AssigneeID   int64  `json:"assignee_id"`
			AssigneeType string `json:"assignee_type"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s, ok := f.Servers[body.AssigneeID]
		switch {
		case !ok:
			f.fail(w, http.StatusNotFound, "not_found", "server not found")
			return
		case ip.Assignee != 0:
			f.fail(w, http.StatusConflict, "primary_ip_assigned", "primary IP is already assigned")
			return
		case s.Status != "off":
			f.fail(w, http.StatusConflict, "server_not_stopped", "server must be powered off")
			return
		case s.IPv4 != 0:
			f.fail(w, http.StatusConflict, "server_has_ipv4", "server already has an IPv4 address")
			return
		}
		ip.Assignee, s.IPv4 = s.ID, ip.ID
	default:
		f.fail(w, http.StatusNotFound, "not_found", "action not found")
		return
	}
	f.reply(w, http.StatusCreated, map[string]any{"action": f.action(action+"_primary_ip", ip.Assignee)})
}

// keyFingerprint is an OpenSSH public key's MD5 fingerprint, colon-separated hex, as the provider
// reports it.
func keyFingerprint(key string) (string, error) {
	f := strings.Fields(key)
	if len(f) < 2 {
		return "", errors.New("not an OpenSSH public key")
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return "", err
	}
	sum := md5.Sum(blob)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexes, ":"), nil
}
