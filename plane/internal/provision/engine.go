// Package provision makes machines for the fleet through a cloud driver: it records each provisioning,
// creates the instance with cloud-init user data that installs and joins the agent with a one-time
// token, approves that join only when the provider vouches for it, adds the node's DNS records, and
// deletes what it created when a step fails or times out. Every replica runs its engine; a lease per
// provisioning lets one advance it at a time, and the stored record lets any resume it.
package provision

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LeaseEngine is the lease, on a provisioning's id, of the replica advancing it.
const LeaseEngine = "provision"

// TokenTTL is how long a one-time join token lasts: the bound, an hour.
const TokenTTL = time.Hour

// Timeouts bound each state; a provisioning longer in one fails and cleans up. Zero fields take the
// defaults.
type Timeouts struct {
	Creating   time.Duration // the create call and recording it: 15 minutes (over CreateLease, so a replica that died mid-call is resumed, not timed out)
	Booting    time.Duration // until the provider reports the instance running: 10 minutes
	Installing time.Duration // until the agent joins with the token: 20 minutes
	Joining    time.Duration // until the join is approved (by the check, or by a person when held): 1 hour
}

// Set reads STATE=DURATION[,STATE=DURATION...] into t (a serve flag's value).
func (t *Timeouts) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		d, err := time.ParseDuration(val)
		if !ok || err != nil || d <= 0 {
			return errcode.New(errcode.UsageInvalid, "%q is not STATE=DURATION with a positive duration", part)
		}
		switch store.ProvisioningState(name) {
		case store.ProvCreating:
			t.Creating = d
		case store.ProvBooting:
			t.Booting = d
		case store.ProvInstalling:
			t.Installing = d
		case store.ProvJoining:
			t.Joining = d
		default:
			return errcode.New(errcode.UsageInvalid, "%q is not a state with a timeout (creating, booting, installing, joining)", name)
		}
	}
	return nil
}

func (t Timeouts) of(s store.ProvisioningState) time.Duration {
	pick := func(v, d time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return d
	}
	switch s {
	case store.ProvCreating:
		return pick(t.Creating, 15*time.Minute)
	case store.ProvBooting:
		return pick(t.Booting, 10*time.Minute)
	case store.ProvInstalling:
		return pick(t.Installing, 20*time.Minute)
	case store.ProvJoining:
		return pick(t.Joining, time.Hour)
	}
	return 0
}

// CreateLease is how long the engine lease lasts during a create call: longer than any driver call, so
// no other replica starts a second create while one is under way.
const CreateLease = 10 * time.Minute

// CleanupRetry is how often a failed deletion is tried again.
const CleanupRetry = time.Minute

// EngineStore is what the provisioning engine reads and writes: the provisionings it advances, the joins
// and nodes they become, the fleet's target release, and (for the nodes' change lease, when Leases is
// nil) the leases.
type EngineStore interface {
	lease.Store
	ProvisioningCreate(ctx context.Context, p store.ProvisioningCreateParams) (store.Provisioning, error)
	ProvisioningGet(ctx context.Context, p store.ProvisioningGetParams) (store.Provisioning, error)
	ProvisioningList(ctx context.Context, p store.ProvisioningListParams) ([]store.Provisioning, error)
	ProvisioningUpdate(ctx context.Context, p store.ProvisioningUpdateParams) (store.ProvisioningUpdateResult, error)
	ProvisioningAdopt(ctx context.Context, p store.ProvisioningAdoptParams) (store.Provisioning, error)
	ProvisioningTransferSet(ctx context.Context, p store.ProvisioningTransferParams) (store.Provisioning, error)
	JoinGet(ctx context.Context, p store.JoinGetParams) (store.Join, error)
	JoinHold(ctx context.Context, p store.JoinHoldParams) (store.Join, error)
	JoinApprove(ctx context.Context, p store.JoinApproveParams) (store.JoinApproveResult, error)
	JoinReject(ctx context.Context, p store.JoinRejectParams) (store.Join, error)
	NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error)
	NodeLabel(ctx context.Context, p store.NodeLabelParams) (store.Node, error)
	NodeDisconnect(ctx context.Context, p store.NodeEndParams) (store.NodeEndResult, error)
	ReleaseGet(ctx context.Context, p store.ReleaseGetParams) (store.Release, error)
	FleetTarget(ctx context.Context) (int64, error)
}

// Engine advances provisionings. Every replica runs one; a pass takes a provisioning's engine lease
// before touching it, and every change moves the record only from the state the pass read
// (store.ProvisioningUpdate), so two replicas never create one machine twice.
type Engine struct {
	services.EngineBase
	Store EngineStore
	Cloud Cloud
	DNS   DNS // nil: provisionings naming a DNS account fail at the DNS step's record, never silently
	// Bootstrap is what every machine is given besides its token.
	Bootstrap Bootstrap
	Timeouts  Timeouts
	// Leases grants the nodes' change leases; nil: a room over Store.
	Leases *lease.Room
}

func (e *Engine) changes() *lease.Room {
	if e.Leases != nil {
		return e.Leases
	}
	return lease.New(e.Store)
}

// Service runs the engine every tick and on every Wake.
func (e *Engine) Service(every time.Duration) *services.Periodic {
	return e.EngineBase.Service("provisioning", every, e.Pass)
}

// Actor is who provisioning's cloud and DNS calls are audited as.
func Actor(id string) string { return "plane:provisioning:" + id }

// Pass advances every open provisioning this replica can lease, once.
func (e *Engine) Pass(ctx context.Context) error {
	list, err := e.Store.ProvisioningList(ctx, store.ProvisioningListParams{Open: true, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	for _, pr := range list {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_, err := e.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: pr.ID, Name: LeaseEngine, Holder: e.Holder,
			Purpose: "advance provisioning", TTL: e.TTL(), Now: e.Time()})
		if errcode.Has(err, errcode.LeaseHeld) {
			continue // another replica advances it
		}
		if err != nil {
			return err
		}
		if err := e.Advance(ctx, pr.ID); err != nil {
			e.Logger().Warn("provisioning not advanced", "provisioning", pr.ID, "err", err)
		}
	}
	return nil
}

// Advance moves one provisioning as far as it can go now. The caller holds its lease.
func (e *Engine) Advance(ctx context.Context, id string) error {
	for range 8 { // each round moves at most one state; a bound keeps a bug from spinning
		pr, err := e.Store.ProvisioningGet(ctx, store.ProvisioningGetParams{ID: id})
		if err != nil {
			return err
		}
		moved, err := e.step(ctx, pr)
		if err != nil || !moved {
			if !pr.State.Live() && pr.State != store.ProvFailed {
				_ = e.Store.LeaseRelease(ctx, store.LeaseReleaseParams{Subject: id, Name: LeaseEngine, Holder: e.Holder})
			}
			return err
		}
	}
	return nil
}

// step does the work of pr's state once, and reports whether the record moved.
func (e *Engine) step(ctx context.Context, pr store.Provisioning) (bool, error) {
	if pr.State.Live() {
		if limit := e.Timeouts.of(pr.State); e.Time().Sub(pr.StateAt) >= limit {
			return e.fail(ctx, pr, fmt.Sprintf("timed out: %s for over %s", pr.State, limit))
		}
	}
	switch pr.State {
	case store.ProvCreating:
		return e.create(ctx, pr)
	case store.ProvBooting:
		return e.boot(ctx, pr)
	case store.ProvInstalling:
		return e.install(ctx, pr)
	case store.ProvJoining:
		return e.join(ctx, pr)
	case store.ProvFailed:
		return e.cleanup(ctx, pr)
	}
	return false, nil
}

// update moves pr from its state, and reports whether it moved.
func (e *Engine) update(ctx context.Context, pr store.Provisioning, p store.ProvisioningUpdateParams) (bool, error) {
	p.ID, p.From, p.By, p.Now = pr.ID, pr.State, store.AuthorPlane, e.Time()
	if p.To == "" {
		p.To = pr.State
	}
	res, err := e.Store.ProvisioningUpdate(ctx, p)
	if err != nil {
		return false, err
	}
	if res.Moved && p.To != pr.State {
		e.Logger().Info("provisioning moved", "provisioning", pr.ID, "name", pr.Name, "from", pr.State, "to", p.To, "detail", p.Detail)
	}
	return res.Moved, nil
}

// create asks the driver for the instance. The token's hash and expiry are recorded before the call,
// and the tag names the record: a plane that died during the call finds the instance by its tag and
// keeps the token the instance's user data holds.
func (e *Engine) create(ctx context.Context, pr store.Provisioning) (bool, error) {
	actor := Actor(pr.ID)
	if pr.InstanceID == "" && !pr.TokenExpiresAt.IsZero() {
		inst, found, err := e.Cloud.FindTagged(ctx, actor, pr.Account, pr.Tag)
		if err != nil {
			return false, err // asked again on the next pass, until the state's timeout
		}
		if found {
			return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvBooting, InstanceID: inst.ID, Addresses: addrs(inst),
				Detail: "found instance " + inst.ID + " by its tag after a restart"})
		}
	}
	digest, err := e.agentDigest(ctx, pr.Platform)
	if err != nil {
		return e.fail(ctx, pr, err.Error())
	}
	token := newToken()
	ud, err := UserData(UserDataParams{Bootstrap: e.Bootstrap, Name: pr.Name, Platform: pr.Platform, Digest: digest, Token: token})
	if err != nil {
		return e.fail(ctx, pr, err.Error())
	}
	moved, err := e.update(ctx, pr, store.ProvisioningUpdateParams{TokenHash: TokenHash(token), TokenExpiresAt: e.Time().Add(TokenTTL),
		Detail: "minted a one-time join token; asking " + pr.Account + " for the instance"})
	if err != nil || !moved {
		return false, err
	}
	pr, err = e.Store.ProvisioningGet(ctx, store.ProvisioningGetParams{ID: pr.ID})
	if err != nil {
		return false, err
	}
	// A create call can outlast the engine lease; another replica taking the lease meanwhile would
	// find no instance yet and create a second one. The lease covers the whole call instead.
	if _, err := e.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: pr.ID, Name: LeaseEngine, Holder: e.Holder,
		Purpose: "create instance", TTL: CreateLease, Now: e.Time()}); err != nil {
		return false, err
	}
	defer func() {
		_, _ = e.Store.LeaseAcquire(context.WithoutCancel(ctx), store.LeaseAcquireParams{Subject: pr.ID, Name: LeaseEngine, Holder: e.Holder,
			Purpose: "advance provisioning", TTL: e.TTL(), Now: e.Time()})
	}()
	inst, err := e.Cloud.Create(ctx, actor, pr.Account, cloud.CreateRequest{Region: pr.Region, Type: pr.Type, Image: pr.Image,
		Label: label(pr.Name), Tags: []string{pr.Tag}, UserData: ud})
	if err != nil {
		return e.fail(ctx, pr, fmt.Sprintf("create failed (%s): %v", codeOf(err), err))
	}
	return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvBooting, InstanceID: inst.ID, Addresses: addrs(inst),
		Detail: "created instance " + inst.ID})
}

// agentDigest is the sha256 the fleet's target release pins for the platform's agent.
func (e *Engine) agentDigest(ctx context.Context, platform string) (string, error) {
	return agentDigest(ctx, e.Store, platform)
}

// releaseReader reads what the fleet's target release pins.
type releaseReader interface {
	ReleaseGet(ctx context.Context, p store.ReleaseGetParams) (store.Release, error)
	FleetTarget(ctx context.Context) (int64, error)
}

// agentDigest is the sha256 of the agent binary for platform that the fleet's target release pins:
// what a new machine's install checks the binary it fetched against.
func agentDigest(ctx context.Context, st releaseReader, platform string) (string, error) {
	seq, err := st.FleetTarget(ctx)
	if err != nil {
		return "", err
	}
	if seq <= 0 {
		return "", errcode.New(errcode.ReleaseNotFound, "no release is published: there is no agent to install")
	}
	rel, err := st.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return "", err
	}
	for _, a := range rel.Artifacts {
		if a.Name == "agent/"+platform {
			return a.Digest, nil
		}
	}
	return "", errcode.New(errcode.ArtifactNotPinned, "release %s pins no agent for %s", rel.Version, platform)
}

// boot waits for the provider to report the instance running.
func (e *Engine) boot(ctx context.Context, pr store.Provisioning) (bool, error) {
	inst, err := e.Cloud.Get(ctx, Actor(pr.ID), pr.Account, pr.InstanceID)
	if errcode.Has(err, errcode.CloudNotFound) {
		return e.fail(ctx, pr, "the instance "+pr.InstanceID+" is gone from the account")
	}
	if err != nil {
		return false, err
	}
	if inst.Status != cloud.StatusRunning {
		return false, nil
	}
	return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvInstalling, Addresses: addrs(inst),
		Detail: "the instance is running at " + strings.Join(addrs(inst), ", ") + "; waiting for its agent to join"})
}

// install waits for the agent's join (ProvisioningTokenUse moves the record on); the instance must
// still exist.
func (e *Engine) install(ctx context.Context, pr store.Provisioning) (bool, error) {
	_, err := e.Cloud.Get(ctx, Actor(pr.ID), pr.Account, pr.InstanceID)
	if errcode.Has(err, errcode.CloudNotFound) {
		return e.fail(ctx, pr, "the instance "+pr.InstanceID+" is gone from the account")
	}
	return false, err
}

// join decides the join that used the token. The plane approves it only when the provider, asked now,
// reports an instance of this account carrying this provisioning's tag at the address the join came
// from; otherwise the join waits for a person, with the reason on it.
func (e *Engine) join(ctx context.Context, pr store.Provisioning) (bool, error) {
	j, err := e.Store.JoinGet(ctx, store.JoinGetParams{ID: pr.JoinID, Now: e.Time()})
	if err != nil {
		return false, err
	}
	switch j.Status {
	case store.JoinApproved:
		return e.joined(ctx, pr, j.NodeID, "the join was approved")
	case store.JoinRejected, store.JoinExpired:
		return e.fail(ctx, pr, "the join "+j.ID+" was "+string(j.Status))
	}
	if j.HoldReason != "" {
		return false, nil // a person decides
	}
	instanceID := pr.InstanceID
	if instanceID == "" { // the agent joined before the create call was recorded
		inst, found, err := e.Cloud.FindTagged(ctx, Actor(pr.ID), pr.Account, pr.Tag)
		if err != nil {
			return false, err
		}
		if found {
			instanceID = inst.ID
		}
	}
	reason, inst, err := e.vouch(ctx, pr, instanceID, j)
	if err != nil {
		return false, err // the provider could not be asked: ask again on the next pass
	}
	if reason != "" {
		if _, err := e.Store.JoinHold(ctx, store.JoinHoldParams{ID: j.ID, ProvisioningID: pr.ID, Reason: reason}); err != nil {
			return false, err
		}
		e.Logger().Warn("provisioned join left for a person", "provisioning", pr.ID, "join", j.ID, "reason", reason)
		return e.update(ctx, pr, store.ProvisioningUpdateParams{Reason: "join waits for a person: " + reason,
			Detail: "join " + j.ID + " left for a person: " + reason})
	}
	res, err := e.Store.JoinApprove(ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Name: pr.Name,
		By: Actor(pr.ID), Now: e.Time()})
	if err != nil {
		if code := errcode.Code(err); code != "" && code != errcode.StoreUnavailable && code != errcode.StoreBusy {
			reason := fmt.Sprintf("approval refused (%s): %v", code, err)
			if _, herr := e.Store.JoinHold(ctx, store.JoinHoldParams{ID: j.ID, ProvisioningID: pr.ID, Reason: reason}); herr != nil {
				return false, herr
			}
			return e.update(ctx, pr, store.ProvisioningUpdateParams{Reason: "join waits for a person: " + reason, Detail: reason})
		}
		return false, err
	}
	e.Logger().Info("provisioned join approved by the provider check", "provisioning", pr.ID, "join", j.ID, "node", res.Node.ID,
		"instance", inst.ID, "source", j.SourceAddress)
	return e.joined(ctx, pr, res.Node.ID, fmt.Sprintf("approved join %s: %s reports %s for instance %s", j.ID, pr.Account, j.SourceAddress, inst.ID))
}

// vouch asks the provider about the instance and says why the join cannot be approved ("" when it
// can). The addresses compared are the provider's, asked now, never the join's own claims.
func (e *Engine) vouch(ctx context.Context, pr store.Provisioning, instanceID string, j store.Join) (string, cloud.Instance, error) {
	if instanceID == "" {
		return "no instance of " + pr.Account + " carries this provisioning's tag", cloud.Instance{}, nil
	}
	inst, err := e.Cloud.Get(ctx, Actor(pr.ID), pr.Account, instanceID)
	if errcode.Has(err, errcode.CloudNotFound) {
		return "instance " + instanceID + " is not in account " + pr.Account, cloud.Instance{}, nil
	}
	if err != nil {
		return "", cloud.Instance{}, err
	}
	if inst.ID != instanceID || !slices.Contains(inst.Tags, pr.Tag) {
		return "instance " + instanceID + " does not carry this provisioning's tag " + pr.Tag, inst, nil
	}
	src, err := netip.ParseAddr(j.SourceAddress)
	if err != nil {
		return fmt.Sprintf("the join's source address %q is not an address", j.SourceAddress), inst, nil
	}
	src = src.Unmap()
	for _, a := range append(slices.Clone(inst.IPv4), inst.IPv6...) {
		if a.Unmap() == src {
			return "", inst, nil
		}
	}
	return fmt.Sprintf("the join came from %s, which %s does not report for instance %s (it reports %s)",
		src, pr.Account, instanceID, strings.Join(addrs(inst), ", ")), inst, nil
}

// NodeLease is how long the node's change lease lasts while provisioning does its post-join work
// (labels, DNS) or an adoption: longer than a DNS call, short enough that a replica that died holding
// it does not keep rollouts off the node for long.
const NodeLease = 10 * time.Minute

// NodeHolder is the holder of the node change lease a provisioning takes.
func NodeHolder(provisioningID string) string { return "provision:" + provisioningID }

// joined finishes a provisioning whose join is approved: its labels, its DNS records, the record. The
// node exists from here on, so the work is done under the node's change lease (the one rollouts and
// exclusive jobs take): no other change overlaps it on the node. A lease another holds makes it wait
// for the next pass, said on the record's timeline.
func (e *Engine) joined(ctx context.Context, pr store.Provisioning, nodeID, detail string) (bool, error) {
	holder := NodeHolder(pr.ID)
	if _, err := e.changes().Acquire(ctx, nodeID, holder, "provisioning "+pr.ID+": labels and DNS", NodeLease, e.Time()); err != nil {
		if !errcode.Has(err, errcode.LeaseHeld) {
			return false, err
		}
		other, _ := errcode.From(err, errcode.LeaseHeld).Details[errcode.DetailReason].(string)
		// Said once on the timeline, not on every pass; the wait is short-lived, so not the reason.
		wait := "the join is approved; waiting for node " + nodeID + "'s change lease, held by " + other
		if n := len(pr.Events); n == 0 || pr.Events[n-1].Detail != wait {
			_, uerr := e.update(ctx, pr, store.ProvisioningUpdateParams{Detail: wait})
			return false, uerr
		}
		return false, nil
	}
	defer func() {
		_ = e.changes().Release(context.WithoutCancel(ctx), nodeID, holder)
	}()
	if len(pr.Labels) > 0 {
		if _, err := e.Store.NodeLabel(ctx, store.NodeLabelParams{ID: nodeID, Set: pr.Labels}); err != nil {
			return false, err
		}
	}
	reason := ""
	if pr.DNSAccount != "" {
		if err := e.addDNS(ctx, pr); err != nil {
			// The node is joined and serving; the records can be added by hand (lexicon dns
			// reconcile). Failing here would delete a working machine over a zone's answer.
			reason = fmt.Sprintf("joined, but DNS records were not added (%s): %v", codeOf(err), err)
			e.Logger().Warn("provisioned node has no DNS records", "provisioning", pr.ID, "err", err)
		} else {
			detail += "; added its A/AAAA records to " + pr.DNSZone
		}
	}
	return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvJoined, NodeID: nodeID, Reason: reason, Detail: detail})
}

func (e *Engine) addDNS(ctx context.Context, pr store.Provisioning) error {
	if e.DNS == nil {
		return errcode.New(errcode.UsageInvalid, "this plane has no DNS drivers")
	}
	want := records(pr)
	if len(want) == 0 {
		return errcode.New(errcode.UsageInvalid, "the provider reports no address for the instance")
	}
	return e.DNS.AddRecords(ctx, Actor(pr.ID), pr.DNSAccount, pr.DNSZone, want)
}

// fail records why pr failed; cleanup then deletes what it created.
func (e *Engine) fail(ctx context.Context, pr store.Provisioning, reason string) (bool, error) {
	if len(reason) > 900 {
		reason = reason[:900]
	}
	p := store.ProvisioningUpdateParams{To: store.ProvFailed, Reason: reason, Detail: "failed: " + reason}
	if pr.InstanceID == "" && !pr.TokenExpiresAt.IsZero() {
		// A create call was made: it may have made the instance even if its answer was lost.
		if inst, found, err := e.Cloud.FindTagged(ctx, Actor(pr.ID), pr.Account, pr.Tag); err == nil && found {
			p.InstanceID = inst.ID
		} else if err != nil {
			p.Reason += fmt.Sprintf("; could not look for an instance it may have made (%v)", err)
			p.Cleanup = store.CleanupFailed
		}
	}
	if pr.JoinID != "" {
		// The machine is about to be deleted: a join still waiting for a person must not be approved
		// for it later. Rejecting retires its key.
		if j, err := e.Store.JoinGet(ctx, store.JoinGetParams{ID: pr.JoinID, Now: e.Time()}); err == nil && (j.Status == store.JoinPending || j.Status == store.JoinExpired) {
			if _, err := e.Store.JoinReject(ctx, store.JoinRejectParams{ID: j.ID, By: Actor(pr.ID), Now: e.Time()}); err != nil {
				return false, err
			}
		}
	}
	e.Logger().Warn("provisioning failed", "provisioning", pr.ID, "name", pr.Name, "state", pr.State, "reason", reason)
	return e.update(ctx, pr, p)
}

// cleanup deletes the instance a failed provisioning created, only if it carries the provisioning's
// tag. A deletion that fails is recorded (the plane:provisioning_orphan incident opens from it) and
// tried again every CleanupRetry.
func (e *Engine) cleanup(ctx context.Context, pr store.Provisioning) (bool, error) {
	if pr.Cleanup == store.CleanupDeleted || (pr.InstanceID == "" && pr.Cleanup == store.CleanupNone) {
		return false, nil // deleted, or nothing was ever made
	}
	if pr.Cleanup == store.CleanupFailed && e.Time().Sub(pr.CleanupAt) < CleanupRetry {
		return false, nil
	}
	instanceID := pr.InstanceID
	if instanceID == "" {
		inst, found, err := e.Cloud.FindTagged(ctx, Actor(pr.ID), pr.Account, pr.Tag)
		if err != nil {
			return e.cleanupFailed(ctx, pr, err)
		}
		if !found {
			return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvCleanedUp, Cleanup: store.CleanupDeleted,
				Detail: "no instance carries its tag: nothing to delete"})
		}
		instanceID = inst.ID
	}
	err := e.Cloud.DeleteTagged(ctx, Actor(pr.ID), pr.Account, instanceID, pr.Tag)
	if err != nil && !errcode.Has(err, errcode.CloudNotFound) {
		return e.cleanupFailed(ctx, pr, err)
	}
	return e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvCleanedUp, InstanceID: instanceID, Cleanup: store.CleanupDeleted,
		Detail: "deleted instance " + instanceID})
}

func (e *Engine) cleanupFailed(ctx context.Context, pr store.Provisioning, err error) (bool, error) {
	reason := pr.Reason
	if !strings.Contains(reason, "; delete failed") {
		reason += fmt.Sprintf("; delete failed (%s): %v", codeOf(err), err)
		if len(reason) > 1000 {
			reason = reason[:1000]
		}
	}
	e.Logger().Error("provisioning could not delete its instance", "provisioning", pr.ID, "instance", pr.InstanceID, "err", err)
	_, uerr := e.update(ctx, pr, store.ProvisioningUpdateParams{Cleanup: store.CleanupFailed, CleanupAt: e.Time(), Reason: reason,
		Detail: fmt.Sprintf("could not delete instance %s (%s): %v", pr.InstanceID, codeOf(err), err)})
	return false, uerr
}

func codeOf(err error) string {
	if c := errcode.Code(err); c != "" {
		return c
	}
	return errcode.InternalError
}

func addrs(inst cloud.Instance) []string {
	var out []string
	for _, a := range append(slices.Clone(inst.IPv4), inst.IPv6...) {
		out = append(out, a.String())
	}
	return out
}

// label is the provider label for a node name: lowercase, dots and underscores as hyphens, at most
// cloud.MaxLabelLen.
func label(name string) string {
	l := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, name)
	if len(l) > cloud.MaxLabelLen {
		l = l[:cloud.MaxLabelLen]
	}
	return strings.Trim(l, "-")
}
