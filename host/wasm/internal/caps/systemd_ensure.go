package caps

import (
	"context"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// systemdEnsure brings a unit to its item: unit files reloaded first when asked, then enabled or
// disabled, then started or stopped, or restarted (reloaded) when it keeps running and a file of it
// changed. A unit that is to run and is not running after all that is capability.failed, with the
// state it is in.
func systemdEnsure(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SystemdEnsure
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	if req.Restart && req.Reload {
		return nil, invalid("reload", "restart or reload, not both")
	}
	fp := &footprint.Footprint{Schema: footprint.SchemaName, Units: []footprint.Unit{{Name: req.Unit, Enabled: req.Enabled, Started: req.Started}}}
	if err := footprint.Validate(fp); err != nil {
		return nil, err
	}
	if err := check(ctx, w, fp); err != nil {
		return nil, err
	}
	sd := w.env.Systemd
	out := capv1.SystemdEnsureResult{Actions: []string{}}
	act := func(action, name string) error {
		if err := sd.Act(ctx, action, name); err != nil {
			return err
		}
		out.Actions = append(out.Actions, action)
		return nil
	}
	if req.DaemonReload {
		if err := act(systemd.ActDaemonReload, ""); err != nil {
			return nil, err
		}
	}
	u, err := sd.Unit(ctx, req.Unit)
	if err != nil {
		return nil, err
	}
	if u.LoadState == "not-found" {
		return nil, errcode.New(errcode.CapabilityNotFound, "systemd.ensure: unit %s not found", req.Unit).With(errcode.DetailUnit, req.Unit)
	}
	if footprint.UnitEnabled(u.UnitFileState) != req.Enabled {
		if req.Enabled {
			if err := sd.Enable(ctx, req.Unit); err != nil {
				return nil, err
			}
			out.Actions = append(out.Actions, "enable")
		} else if err := act(systemd.ActDisable, req.Unit); err != nil {
			return nil, err
		}
	}
	running := footprint.UnitStarted(u.ActiveState)
	switch {
	case req.Started && !running:
		err = act(systemd.ActStart, req.Unit)
	case !req.Started && running:
		err = act(systemd.ActStop, req.Unit)
	case req.Started && req.Reload:
		step("systemd.before_restart")
		err = act(systemd.ActReload, req.Unit)
	case req.Started && req.Restart:
		step("systemd.before_restart")
		if err = sd.Restart(ctx, req.Unit); err == nil {
			out.Actions = append(out.Actions, "restart")
		}
	}
	after, aerr := sd.Unit(ctx, req.Unit)
	if aerr == nil {
		out.After = after
	}
	if err != nil {
		return nil, errcode.From(err, errcode.CapabilityFailed).With(errcode.DetailState, after.ActiveState)
	}
	if req.Started && aerr == nil && !footprint.UnitStarted(after.ActiveState) {
		return nil, errcode.New(errcode.CapabilityFailed, "%s is %s after it was started", req.Unit, after.ActiveState).
			With(errcode.DetailUnit, req.Unit).With(errcode.DetailState, after.ActiveState)
	}
	return out, nil
}
