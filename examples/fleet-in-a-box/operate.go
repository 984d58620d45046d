package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// demoRole is the small role the demo assigns to its node: one file beneath the folder the demo's
// policy lets converge write (convergeRoot), so its footprint is one item a converge could apply.
const demoRole = "demo-motd"

// installCommand asks the plane for the command that enrols a second, existing machine, and prints it
// for pasting. Its token is one-time and expires in an hour; the demo's release pins only this
// machine's platform, so the command is for that platform. It answers the summary's line.
func installCommand(admin func(...string) (map[string]any, error), platform string) (string, error) {
	ic, err := admin("nodes", "install-command", "--platform", strings.Replace(platform, "/", "-", 1), "--labels", "demo=second", "--expires", "1h")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stdout, "paste this as root on a second %s machine that reaches the plane, before %v (its token is one-time; its join is approved at once):\n%v\n",
		platform, ic["expires_at"], ic["command"])
	return fmt.Sprintf("second machine: lexicon nodes install-command printed its one-line install (enrolment %v, expires %v)", ic["id"], ic["expires_at"]), nil
}

// assignRole makes the demo's role, assigns it to the node and prints the node's footprint from it.
// It says so when the node's vocabulary lacks converge (the footprint is shown all the same: it is
// the plane's, whatever the node can run). It answers the summary's line.
func assignRole(admin func(...string) (map[string]any, error), node map[string]any, convergeRoot string) (string, error) {
	hasConverge := false
	for _, w := range node["vocabulary"].([]any) {
		if w, _ := w.(map[string]any); w["name"] == "converge" {
			hasConverge = true
		}
	}
	if hasConverge {
		fmt.Fprintf(stdout, "the node's vocabulary has converge, and its policy lets converge write beneath %s\n", convergeRoot)
	} else {
		fmt.Fprintf(stdout, "the node's vocabulary lacks converge: the role is assigned anyway, to show its footprint, but nothing would apply it\n")
	}
	file := filepath.Join(dir, "role-"+demoRole+".json")
	role, _ := json.Marshal(map[string]any{"name": demoRole, "description": "one file, to show a footprint",
		"files": []map[string]string{{"path": filepath.Join(convergeRoot, "motd"), "content": "this machine is in the demo's fleet\n", "mode": "0644"}}})
	if err := os.WriteFile(file, role, 0o644); err != nil {
		return "", err
	}
	if _, err := admin("roles", "create", file); err != nil {
		return "", err
	}
	name := node["name"].(string)
	if _, err := admin("roles", "assign", demoRole, name); err != nil {
		return "", err
	}
	shown, err := admin("roles", "show", demoRole)
	if err != nil {
		return "", err
	}
	var fp struct {
		Files []struct {
			Path, SHA256, Mode, Owner, Group string
			Size                             int64
		}
	}
	raw, _ := json.Marshal(shown["footprint"])
	if err := json.Unmarshal(raw, &fp); err != nil || len(fp.Files) != 1 {
		return "", fmt.Errorf("the footprint of role %s: %v %s", demoRole, err, raw)
	}
	f := fp.Files[0]
	fmt.Fprintf(stdout, "role %s assigned to %s, carried by %v; its footprint:\n  file %s %s %s:%s %d bytes sha256 %s\n",
		demoRole, name, shown["nodes"], f.Path, f.Mode, f.Owner, f.Group, f.Size, f.SHA256)
	fmt.Fprintf(stdout, "see what converge would change with lexicon roles plan %s --wait\n", demoRole)
	converge := "with converge"
	if !hasConverge {
		converge = "lacking converge"
	}
	return fmt.Sprintf("role: %s on %s (%s), footprint file %s sha256 %s", demoRole, name, converge, f.Path, f.SHA256[:min(12, len(f.SHA256))]), nil
}

// fleetSecurity prints the fleet security page's address and the node's row from the API: grey with
// its reason until the node reports its packages; red with the first reason, green when nothing is wrong. It answers the summary's line.
func fleetSecurity(admin func(...string) (map[string]any, error), planeURL, nodeID string) (string, error) {
	v, err := admin("fleet", "security")
	if err != nil {
		return "", err
	}
	for _, r := range v["rows"].([]any) {
		r := r.(map[string]any)
		if r["node_id"] != nodeID {
			continue
		}
		why := "nothing waits, nothing runs replaced code"
		if rs, _ := r["reasons"].([]any); len(rs) > 0 {
			why = fmt.Sprint(rs[0].(map[string]any)["text"])
		}
		line := fmt.Sprintf("fleet security: %s/ui/security: %v %v: %s", planeURL, r["node"], r["level"], why)
		fmt.Fprintf(stdout, "%s (counts %v)\n", line, v["counts"])
		return line, nil
	}
	return "", fmt.Errorf("the fleet security view has no row for node %s", nodeID)
}
