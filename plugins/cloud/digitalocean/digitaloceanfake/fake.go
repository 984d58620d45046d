// Package digitaloceanfake is an in-memory stand-in for DigitalOcean's API v2, built from its documented shapes, for the
// digitalocean driver's tests and the plane's provisioning tests (which cannot import the driver's package main).
package digitaloceanfake

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// Fake stands in for DigitalOcean's API v2, built from its documented shapes: Bearer token
// auth, lists under a named key with links.pages (first, prev, next, last) and meta.total, per_page up
// to 200, errors as {"id", "message", "request_id"}, 429 too_many_requests with the ratelimit headers,
// SSH keys looked up by fingerprint, and Droplet actions.
type Fake struct {
	Mu        sync.Mutex
	base      string
	token     string
	seq       int
	Droplets  map[int]*Droplet
	Keys      []map[string]any
	RateLimit int
	Limit     int
}

// Droplet is a Droplet as the fake keeps it.
type Droplet struct {
	ID       int
	Name     string
	Region   string
	Size     string
	Image    string
	Status   string
	Tags     []string
	Created  string
	IPv4, V6 string
	UserData string
}

var (
	doRegions = []map[string]any{
		{"slug": "nyc3", "name": "New York 3", "sizes": []string{"s-1vcpu-1gb", "s-2vcpu-2gb"}, "available": true, "features": []string{"ipv6"}},
		{"slug": "fra1", "name": "Frankfurt 1", "sizes": []string{"s-1vcpu-1gb"}, "available": true, "features": []string{"ipv6"}},
	}
	doSizes = []map[string]any{
		{"slug": "s-1vcpu-1gb", "memory": 1024, "vcpus": 1, "disk": 25, "transfer": 1.0, "price_monthly": 6.0, "regions": []string{"nyc3", "fra1"}, "available": true, "description": "Basic"},
		{"slug": "s-2vcpu-2gb", "memory": 2048, "vcpus": 2, "disk": 60, "transfer": 3.0, "price_monthly": 18.0, "regions": []string{"nyc3"}, "available": true, "description": "Basic"},
	}
	doImages = []string{"debian-12-x64", "ubuntu-24-04-x64"}
	doName   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$`)
	doTag    = regexp.MustCompile(`^[a-zA-Z0-9_:-]+$`)
)

// New serves a fake that accepts token, until the test ends, and returns it with the base URL a driver
// takes as its endpoint.
func New(t testing.TB, token string) (*Fake, string) {
	t.Helper()
	f := &Fake{token: token, seq: 300000000, Droplets: map[int]*Droplet{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.base = srv.URL
	return f, srv.URL + "/"
}

func (f *Fake) reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("ratelimit-limit", "5000")
	w.Header().Set("ratelimit-remaining", "4999")
	w.Header().Set("ratelimit-reset", strconv.FormatInt(time.Now().Unix()+60, 10))
	w.WriteHeader(status)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

func (f *Fake) fail(w http.ResponseWriter, status int, id, msg string) {
	f.reply(w, status, map[string]any{"id": id, "message": msg, "request_id": "4d9d8375-3c56-4925-a3e7-eb137fed17e9"})
}

// list answers a paginated list under key with links and meta, as the API does.
func (f *Fake) list(w http.ResponseWriter, r *http.Request, key string, items []any) {
	page, per := 1, 20
	if v := r.URL.Query().Get("page"); v != "" {
		page, _ = strconv.Atoi(v)
	}
	if v := r.URL.Query().Get("per_page"); v != "" {
		per, _ = strconv.Atoi(v)
	}
	if page < 1 || per < 1 || per > 200 {
		f.fail(w, http.StatusBadRequest, "bad_request", "per_page must be between 1 and 200")
		return
	}
	total := len(items)
	last := max(1, (total+per-1)/per)
	start := min((page-1)*per, total)
	out := items[start:min(start+per, total)]
	if out == nil {
		out = []any{}
	}
	link := func(p int) string { return fmt.Sprintf("%s%s?page=%d&per_page=%d", f.base, r.URL.Path, p, per) }
	pages := map[string]string{}
	if page > 1 {
		pages["first"], pages["prev"] = link(1), link(page-1)
	}
	if page < last {
		pages["next"], pages["last"] = link(page+1), link(last)
	}
	f.reply(w, http.StatusOK, map[string]any{key: out, "links": map[string]any{"pages": pages}, "meta": map[string]any{"total": total}})
}

func (f *Fake) dropletJSON(d *Droplet) map[string]any {
	i := slices.IndexFunc(doSizes, func(s map[string]any) bool { return s["slug"] == d.Size })
	j := slices.IndexFunc(doRegions, func(r map[string]any) bool { return r["slug"] == d.Region })
	v4 := []any{map[string]any{"ip_address": "10.110.0." + strconv.Itoa(d.ID%250), "netmask": "255.255.240.0", "gateway": "10.110.0.1", "type": "private"}}
	if d.IPv4 != "" {
		v4 = append(v4, map[string]any{"ip_address": d.IPv4, "netmask": "255.255.240.0", "gateway": "203.0.113.1", "type": "public"})
	}
	return map[string]any{
		"id": d.ID, "name": d.Name, "memory": doSizes[i]["memory"], "vcpus": doSizes[i]["vcpus"], "disk": doSizes[i]["disk"],
		"locked": false, "status": d.Status, "created_at": d.Created, "features": []string{"ipv6"}, "backup_ids": []int{}, "snapshot_ids": []int{},
		"image": map[string]any{"id": 106569146, "name": d.Image, "distribution": "Debian", "slug": d.Image, "public": true, "type": "base"},
		"size":  doSizes[i], "size_slug": d.Size, "region": doRegions[j], "tags": d.Tags, "volume_ids": []string{}, "vpc_uuid": "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
		"networks": map[string]any{"v4": v4, "v6": []any{map[string]any{"ip_address": d.V6, "netmask": 64, "gateway": "2001:db8::1", "type": "public"}}},
	}
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.RateLimit > 0 {
		f.RateLimit--
		w.Header().Set("Retry-After", "0")
		f.fail(w, http.StatusTooManyRequests, "too_many_requests", "API Rate limit exceeded.")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, http.StatusUnauthorized, "Unauthorized", "Unable to authenticate you")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v2")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/regions":
		f.list(w, r, "regions", anys(doRegions))
	case r.Method == http.MethodGet && path == "/sizes":
		f.list(w, r, "sizes", anys(doSizes))
	case r.Method == http.MethodGet && path == "/account":
		f.reply(w, http.StatusOK, map[string]any{"account": map[string]any{
			"droplet_limit": 25, "email": "ops@example.com", "name": "Lexicon Tester", "uuid": "b6fr89dbf6d9156cace5f3c78dc9851d957381ef",
			"email_verified": true, "status": "active", "team": map[string]any{"uuid": "5df3e3004a17e242b7c20ca6c9fc25b701a47ece", "name": "lexicon-test"},
		}})
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "account" && parts[1] == "keys":
		for _, k := range f.Keys {
			if k["fingerprint"] == parts[2] {
				f.reply(w, http.StatusOK, map[string]any{"ssh_key": k})
				return
			}
		}
		f.fail(w, http.StatusNotFound, "not_found", "The resource you were accessing could not be found.")
	case r.Method == http.MethodPost && path == "/account/keys":
		var body struct {
			Name      string `json:"name"`
			PublicKey string `json:"public_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		fp, err := keyFingerprint(body.PublicKey)
		if err != nil {
			f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "Key invalid, key should be of the format `type key [comment]`")
			return
		}
		if slices.ContainsFunc(f.Keys, func(k map[string]any) bool { return k["fingerprint"] == fp }) {
			f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "SSH Key is already in use on your account")
			return
		}
		f.seq++
		key := map[string]any{"id": f.seq, "fingerprint": fp, "public_key": body.PublicKey, "name": body.Name}
		f.Keys = append(f.Keys, key)
		f.reply(w, http.StatusCreated, map[string]any{"ssh_key": key})
	case r.Method == http.MethodGet && path == "/droplets":
		var ids []int
		for id := range f.Droplets {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var items []any
		for _, id := range ids {
			items = append(items, f.dropletJSON(f.Droplets[id]))
		}
		f.list(w, r, "droplets", items)
	case r.Method == http.MethodPost && path == "/droplets":
		f.create(w, r)
	case len(parts) >= 2 && parts[0] == "droplets":
		id, _ := strconv.Atoi(parts[1])
		d, ok := f.Droplets[id]
		if !ok {
			f.fail(w, http.StatusNotFound, "not_found", "The resource you were accessing could not be found.")
			return
		}
		switch {
		case len(parts) == 2 && r.Method == http.MethodGet:
			if d.Status == "new" {
				d.Status = "active"
			}
			f.reply(w, http.StatusOK, map[string]any{"droplet": f.dropletJSON(d)})
		case len(parts) == 2 && r.Method == http.MethodDelete:
			delete(f.Droplets, id)
			f.reply(w, http.StatusNoContent, nil)
		case len(parts) == 3 && parts[2] == "actions" && r.Method == http.MethodPost:
			var body struct {
				Type string `json:"type"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			switch body.Type {
			case "power_on", "reboot", "power_cycle":
				d.Status = "active"
			case "power_off", "shutdown":
				d.Status = "off"
			default:
				f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "Action type is invalid")
				return
			}
			f.seq++
			now := time.Now().UTC().Format(time.RFC3339)
			f.reply(w, http.StatusCreated, map[string]any{"action": map[string]any{"id": f.seq, "status": "in-progress", "type": body.Type, "started_at": now, "resource_id": id, "resource_type": "droplet"}})
		default:
			f.fail(w, http.StatusNotFound, "not_found", "The resource you were accessing could not be found.")
		}
	default:
		f.fail(w, http.StatusNotFound, "not_found", "The resource you were accessing could not be found.")
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
		Name     string            `json:"name"`
		Region   string            `json:"region"`
		Size     string            `json:"size"`
		Image    json.RawMessage   `json:"image"`
		SSHKeys  []json.RawMessage `json:"ssh_keys"`
		UserData string            `json:"user_data"`
		Tags     []string          `json:"tags"`
		IPv6     bool              `json:"ipv6"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.fail(w, http.StatusBadRequest, "bad_request", "malformed JSON")
		return
	}
	var image string
	_ = json.Unmarshal(body.Image, &image)
	ri := slices.IndexFunc(doRegions, func(m map[string]any) bool { return m["slug"] == body.Region })
	switch {
	case !doName.MatchString(body.Name):
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "Name Only valid hostname characters are allowed. (a-z, A-Z, 0-9, . and -)")
		return
	case ri < 0:
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "You specified an invalid region for Droplet creation.")
		return
	case !slices.Contains(doRegions[ri]["sizes"].([]string), body.Size):
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "You specified an invalid size for Droplet creation.")
		return
	case !slices.Contains(doImages, image):
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "You specified an invalid image for Droplet creation.")
		return
	case len(body.UserData) > 64<<10: // DigitalOcean's API: user data up to 64 KiB
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "User data is too large.")
		return
	case slices.ContainsFunc(body.Tags, func(tag string) bool { return len(tag) > 255 || !doTag.MatchString(tag) }):
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "Tags may contain letters, numbers, colons, dashes, and underscores; there is a limit of 255 characters per tag.")
		return
	case f.Limit > 0 && len(f.Droplets) >= f.Limit:
		f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "creating this/these droplet(s) will exceed your droplet limit")
		return
	}
	for _, raw := range body.SSHKeys {
		var fp string
		if json.Unmarshal(raw, &fp) != nil || !slices.ContainsFunc(f.Keys, func(k map[string]any) bool { return k["fingerprint"] == fp }) {
			f.fail(w, http.StatusUnprocessableEntity, "unprocessable_entity", "You specified an invalid ssh key.")
			return
		}
	}
	f.seq++
	n := len(f.Droplets) + 1
	d := &Droplet{
		ID: f.seq, Name: body.Name, Region: body.Region, Size: body.Size, Image: image, Status: "new", Tags: body.Tags,
		Created: time.Now().UTC().Format(time.RFC3339), IPv4: fmt.Sprintf("203.0.113.%d", n%250+1), V6: fmt.Sprintf("2001:db8:0:%x::1", f.seq%65536), UserData: body.UserData,
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	f.Droplets[d.ID] = d
	f.reply(w, http.StatusAccepted, map[string]any{"droplet": f.dropletJSON(d), "links": map[string]any{"actions": []any{map[string]any{"id": f.seq + 1, "rel": "create", "href": f.base + "/v2/actions/1"}}}})
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
