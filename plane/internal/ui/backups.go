package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

type backupsData struct {
	Fleet    api.BackupFleet
	Targets  api.BackupTargetList
	Policies api.BackupPolicyList
}

// backups is the fleet's backups page: each node's health, the targets, the fleet's policy.
func (u *UI) backups(w http.ResponseWriter, r *http.Request) {
	var d backupsData
	var err error
	if d.Fleet, err = run(u, r, api.BackupsFleet, noArg(u.cfg.Backups.Fleet), struct{}{}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	if d.Targets, err = run(u, r, api.BackupTargetsList, noArg(u.cfg.Backups.ListTargets), struct{}{}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	if d.Policies, err = run(u, r, api.BackupPoliciesList, noArg(u.cfg.Backups.ListPolicies), struct{}{}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "backups", d)
}

// backupNode is one node's backups page: health, the policy it follows (set, off, clear), its jobs.
func (u *UI) backupNode(w http.ResponseWriter, r *http.Request) {
	n, err := run(u, r, api.BackupsNode, u.cfg.Backups.Node, chi.URLParam(r, "id"))
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "backupnode", n)
}

func (u *UI) backupTargetAdd(w http.ResponseWriter, r *http.Request) {
	req := api.BackupTargetRequest{Name: r.PostFormValue("name"), Endpoint: r.PostFormValue("endpoint"), Region: r.PostFormValue("region"),
		Bucket: r.PostFormValue("bucket"), Prefix: r.PostFormValue("prefix"), AccessKeyID: r.PostFormValue("access_key_id"),
		SecretAccessKey: r.PostFormValue("secret_access_key"), VirtualHosted: r.PostFormValue("virtual_hosted") == "true",
		Recovery: strings.TrimSpace(r.PostFormValue("recovery"))}
	_, err := run(u, r, api.BackupTargetsAdd, u.cfg.Backups.AddTarget, req)
	u.backupsDone(w, r, err, "/backups")
}

func (u *UI) backupTargetRemove(w http.ResponseWriter, r *http.Request) {
	_, err := run(u, r, api.BackupTargetsRemove, u.cfg.Backups.RemoveTarget, chi.URLParam(r, "name"))
	u.backupsDone(w, r, err, "/backups")
}

func (u *UI) backupTargetCheck(w http.ResponseWriter, r *http.Request) {
	c, err := run(u, r, api.BackupTargetsCheck, u.cfg.Backups.CheckTarget, chi.URLParam(r, "name"))
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "backupcheck", c)
}

// backupPolicySet sets the fleet's policy (no {id}) or a node's own from the form.
func (u *UI) backupPolicySet(w http.ResponseWriter, r *http.Request) {
	node := chi.URLParam(r, "id")
	keep, _ := strconv.Atoi(r.PostFormValue("keep_days"))
	req := api.BackupPolicy{Enabled: r.PostFormValue("enabled") != "false", Target: r.PostFormValue("target"), Every: r.PostFormValue("every"),
		KeepDays: keep, VerifyEvery: r.PostFormValue("verify_every"), Paths: lines(r.PostFormValue("paths")),
		Databases: lines(r.PostFormValue("databases"))}
	rt := api.BackupPolicyFleet
	if node != "" {
		rt = api.BackupPolicySet
	}
	_, err := run(u, r, rt, func(ctx context.Context, who api.Token, req api.BackupPolicy) (api.BackupPolicy, error) {
		return u.cfg.Backups.SetPolicy(ctx, who, node, req)
	}, req)
	if node == "" {
		u.backupsDone(w, r, err, "/backups")
		return
	}
	u.backupsDone(w, r, err, "/backups/nodes/"+node)
}

func (u *UI) backupPolicyClear(w http.ResponseWriter, r *http.Request) {
	node := chi.URLParam(r, "id")
	_, err := run(u, r, api.BackupPolicyClear, u.cfg.Backups.ClearPolicy, node)
	u.backupsDone(w, r, err, "/backups/nodes/"+node)
}

// backupRestore queues a restore from the node page's form (asked for twice: the form opens from a
// "Restore…" summary) and shows the queued job.
func (u *UI) backupRestore(w http.ResponseWriter, r *http.Request) {
	node := chi.URLParam(r, "id")
	req := api.BackupRestoreRequest{Run: r.PostFormValue("run"), Into: strings.TrimSpace(r.PostFormValue("into")),
		Path: strings.TrimSpace(r.PostFormValue("path")), Database: strings.TrimSpace(r.PostFormValue("database")),
		IntoDatabase: strings.TrimSpace(r.PostFormValue("into_database"))}
	j, err := run(u, r, api.BackupsRestore, func(ctx context.Context, who api.Token, req api.BackupRestoreRequest) (api.Job, error) {
		return u.cfg.Backups.Restore(ctx, who, node, req)
	}, req)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/jobs/"+j.ID, http.StatusSeeOther)
}

func (u *UI) backupsDone(w http.ResponseWriter, r *http.Request, err error, to string) {
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+to, http.StatusSeeOther)
}
