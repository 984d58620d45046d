package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Provisionings: the store's side of machines a cloud driver makes for the plane.

// providerID is what a region, type, image or instance id may be: what every provider's ids look like
// (sdk/driver/cloud checks the same), bounded here so a record never holds more.
func checkProviderID(field, v string) error {
	if v == "" || len(v) > 128 || strings.ContainsAny(v, " \t\r\n") || !utf8.ValidString(v) {
		return invalid(field, "%s must be a provider id of at most 128 characters", field)
	}
	return nil
}

func checkDetail(field, v string) error {
	if len(v) > MaxProvisioningDetail || !utf8.ValidString(v) {
		return invalid(field, "%s is over %d bytes or not UTF-8", field, MaxProvisioningDetail)
	}
	return nil
}

var platformRE = regexp.MustCompile(`^[a-z0-9]{1,16}-[a-z0-9]{1,16}$`)

func checkProvisioningCreate(p ProvisioningCreateParams) error {
	if !ValidNodeName(p.Name) {
		return invalid("name", "name %q must be a host name of at most 63 characters", p.Name)
	}
	if !ValidAccountName(p.Account) {
		return invalid("account", "account %q is not an account name", p.Account)
	}
	for f, v := range map[string]string{"region": p.Region, "type": p.Type, "image": p.Image} {
		if err := checkProviderID(f, v); err != nil {
			return err
		}
	}
	if p.Platform != "" && !platformRE.MatchString(p.Platform) {
		return invalid("platform", "platform %q is not os-arch", p.Platform)
	}
	if (p.DNSAccount == "") != (p.DNSZone == "") {
		return invalid("dns_zone", "a DNS account and a zone go together")
	}
	if p.DNSAccount != "" && !ValidAccountName(p.DNSAccount) {
		return invalid("dns_account", "account %q is not an account name", p.DNSAccount)
	}
	if len(p.DNSZone) > 253 {
		return invalid("dns_zone", "zone is over 253 characters")
	}
	if len(p.Labels) > MaxLabels {
		return invalid("labels", "a node carries at most %d labels", MaxLabels)
	}
	for k, v := range p.Labels {
		if !ValidLabelKey(k) || !ValidLabelValue(v) {
			return invalid("labels", "label %s=%s is not a label", k, v)
		}
	}
	return checkActor(p.By)
}

func (s *sqlStore) ProvisioningCreate(ctx context.Context, p ProvisioningCreateParams) (Provisioning, error) {
	if err := checkProvisioningCreate(p); err != nil {
		return Provisioning{}, err
	}
	t := now(p.Now)
	id := s.ids.next("prov_", t)
	if p.Platform == "" {
		p.Platform = DefaultPlatform
	}
	labels := p.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	doc, _ := json.Marshal(labels)
	var out Provisioning
	err := s.tx(ctx, "create provisioning", func(ex sqldb.Execer) error {
		if _, err := scanNode(ex.QueryRow(ctx, s.q.NodeGetByName, p.Name)); err == nil {
			return nameTaken(p.Name, "an active node")
		} else if s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		var other string
		if err := ex.QueryRow(ctx, s.q.ProvisioningLiveName, p.Name).Scan(&other); err == nil {
			return nameTaken(p.Name, "provisioning "+other)
		} else if s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		tag := "lexicon-" + strings.ReplaceAll(id, "_", "-")
		if _, err := ex.Exec(ctx, s.q.ProvisioningInsert, id, p.Name, p.Account, p.Region, p.Type, p.Image, string(doc),
			p.DNSAccount, p.DNSZone, tag, t, p.By, p.Platform); err != nil {
			if s.drv.Kind(err) == sqldb.ErrUnique {
				return nameTaken(p.Name, "a provisioning under way")
			}
			return err
		}
		if _, err := ex.Exec(ctx, s.q.ProvisioningEventInsert, id, t, p.By, string(ProvCreating),
			fmt.Sprintf("provision %s on %s (%s, %s, %s)", p.Name, p.Account, p.Region, p.Type, p.Image)); err != nil {
			return err
		}
		var err error
		out, err = s.provisioningGet(ctx, ex, id)
		return err
	})
	return out, err
}

func nameTaken(name, by string) error {
	return errcode.New(errcode.ProvisionNameTaken, "the name %s is taken by %s", name, by).With(errcode.DetailName, name)
}

func (s *sqlStore) ProvisioningGet(ctx context.Context, p ProvisioningGetParams) (Provisioning, error) {
	if err := checkID("id", p.ID); err != nil {
		return Provisioning{}, err
	}
	var out Provisioning
	err := s.read(ctx, "get provisioning", func(ex sqldb.Execer) error {
		var err error
		if out, err = s.provisioningGet(ctx, ex, p.ID); err != nil {
			return err
		}
		rs, err := ex.Query(ctx, s.q.ProvisioningEvents, p.ID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var ev ProvisioningEvent
			var state string
			if err := rs.Scan(stamp{&ev.At}, &ev.Actor, &state, &ev.Detail); err != nil {
				return err
			}
			ev.State = ProvisioningState(state)
			out.Events = append(out.Events, ev)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) provisioningGet(ctx context.Context, ex sqldb.Execer, id string) (Provisioning, error) {
	pr, err := scanProvisioning(ex.QueryRow(ctx, s.q.ProvisioningGet, id))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Provisioning{}, errcode.New(errcode.ProvisionNotFound, "no provisioning %s", id).With(errcode.DetailID, id)
	}
	return pr, err
}

func (s *sqlStore) ProvisioningList(ctx context.Context, p ProvisioningListParams) ([]Provisioning, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.State != "" && !ValidProvisioningState(p.State) {
		return nil, invalid("state", "%q is not a provisioning state", p.State)
	}
	var out []Provisioning
	err = s.read(ctx, "list provisionings", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.ProvisioningList, p.Open, int64(limit), string(p.State))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			pr, err := scanProvisioning(rs)
			if err != nil {
				return err
			}
			out = append(out, pr)
		}
		return rs.Err()
	})
	return out, err
}

func checkProvisioningUpdate(p ProvisioningUpdateParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	if !ValidProvisioningState(p.From) || !ValidProvisioningState(p.To) {
		return invalid("state", "%q to %q: not provisioning states", p.From, p.To)
	}
	if p.InstanceID != "" {
		if err := checkProviderID("instance_id", p.InstanceID); err != nil {
			return err
		}
	}
	if len(p.Addresses) > 32 {
		return invalid("addresses", "at most 32 addresses")
	}
	for _, a := range p.Addresses {
		if _, err := netip.ParseAddr(a); err != nil {
			return invalid("addresses", "%q is not an IP address", a)
		}
	}
	if p.TokenHash != "" && (len(p.TokenHash) != 64 || strings.Trim(p.TokenHash, "0123456789abcdef") != "") {
		return invalid("token_hash", "token hash must be 64 lowercase hex digits")
	}
	switch p.Cleanup {
	case CleanupNone, CleanupDeleted, CleanupFailed:
	default:
		return invalid("cleanup", "cleanup %q is not an outcome", p.Cleanup)
	}
	if err := checkDetail("reason", p.Reason); err != nil {
		return err
	}
	if err := checkDetail("detail", p.Detail); err != nil {
		return err
	}
	return checkActor(p.By)
}

func (s *sqlStore) ProvisioningUpdate(ctx context.Context, p ProvisioningUpdateParams) (ProvisioningUpdateResult, error) {
	if err := checkProvisioningUpdate(p); err != nil {
		return ProvisioningUpdateResult{}, err
	}
	t := now(p.Now)
	var res ProvisioningUpdateResult
	err := s.tx(ctx, "update provisioning", func(ex sqldb.Execer) error {
		cur, hash, err := s.provisioningWithHash(ctx, ex, p.ID)
		if err != nil {
			return err
		}
		res = ProvisioningUpdateResult{Provisioning: cur}
		if cur.State != p.From {
			return nil
		}
		next := cur
		if next.State != p.To {
			next.State, next.StateAt = p.To, t
		}
		if p.InstanceID != "" {
			next.InstanceID = p.InstanceID
		}
		if p.Addresses != nil {
			next.Addresses = p.Addresses
		}
		if p.TokenHash != "" {
			hash, next.TokenExpiresAt, next.TokenUsedAt = p.TokenHash, p.TokenExpiresAt, time.Time{}
		}
		if p.JoinID != "" {
			next.JoinID = p.JoinID
		}
		if p.NodeID != "" {
			next.NodeID = p.NodeID
		}
		if p.Reason != "" {
			next.Reason = p.Reason
		}
		if p.Cleanup != "" {
			next.Cleanup = p.Cleanup
		}
		if !p.CleanupAt.IsZero() {
			next.CleanupAt = p.CleanupAt
		}
		if !next.State.Live() && next.FinishedAt.IsZero() {
			next.FinishedAt = t
		}
		addrs, _ := json.Marshal(nonNil(next.Addresses))
		moved, err := scanProvisioning(ex.QueryRow(ctx, s.q.ProvisioningSet, p.ID, string(p.From), string(next.State), next.StateAt,
			next.InstanceID, string(addrs), hash, at(next.TokenExpiresAt), at(next.TokenUsedAt), next.JoinID, next.NodeID,
			next.Reason, next.Cleanup, at(next.CleanupAt), t, at(next.FinishedAt), cur.UpdatedAt))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return nil // moved by another between the read and the write
		}
		if err != nil {
			return err
		}
		if p.Detail != "" {
			if _, err := ex.Exec(ctx, s.q.ProvisioningEventInsert, p.ID, t, p.By, string(next.State), p.Detail); err != nil {
				return err
			}
		}
		res = ProvisioningUpdateResult{Provisioning: moved, Moved: true}
		return nil
	})
	return res, err
}

func (s *sqlStore) provisioningWithHash(ctx context.Context, ex sqldb.Execer, id string) (Provisioning, string, error) {
	cur, err := s.provisioningGet(ctx, ex, id)
	if err != nil {
		return Provisioning{}, "", err
	}
	// The hash is read only here, where it is carried over unchanged.
	var hash string
	if cur.TokenExpiresAt.IsZero() {
		return cur, "", nil
	}
	err = ex.QueryRow(ctx, s.q.ProvisioningTokenHash, id).Scan(&hash)
	return cur, hash, err
}

func checkTokenHash(h string) error {
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return errcode.New(errcode.ProvisionTokenInvalid, "the token is not a provisioning token")
	}
	return nil
}

// tokenUsable refuses a token that is spent or past its expiry.
func tokenUsable(pr Provisioning, t time.Time) error {
	switch {
	case !pr.TokenUsedAt.IsZero() || pr.JoinID != "":
		return errcode.New(errcode.ProvisionTokenUsed, "this provisioning token was already used by join %s", pr.JoinID).
			With(errcode.DetailID, pr.ID)
	case !t.Before(pr.TokenExpiresAt):
		return errcode.New(errcode.ProvisionTokenExpired, "this provisioning token expired at %s", pr.TokenExpiresAt.Format(time.RFC3339)).
			With(errcode.DetailExpiresAt, pr.TokenExpiresAt)
	case !pr.State.Live():
		return errcode.New(errcode.ProvisionTokenExpired, "provisioning %s is %s; its token is void", pr.ID, pr.State).
			With(errcode.DetailState, string(pr.State))
	}
	return nil
}

func (s *sqlStore) provisioningByToken(ctx context.Context, ex sqldb.Execer, hash string) (Provisioning, error) {
	var h string
	pr, err := scanProvisioning(ex.QueryRow(ctx, s.q.ProvisioningByToken, hash), &h)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Provisioning{}, errcode.New(errcode.ProvisionTokenInvalid, "no provisioning minted this token")
	}
	return pr, err
}

func (s *sqlStore) ProvisioningTokenCheck(ctx context.Context, p ProvisioningTokenParams) (Provisioning, error) {
	if err := checkTokenHash(p.TokenHash); err != nil {
		return Provisioning{}, err
	}
	t := now(p.Now)
	var out Provisioning
	err := s.read(ctx, "check provisioning token", func(ex sqldb.Execer) error {
		pr, err := s.provisioningByToken(ctx, ex, p.TokenHash)
		if err != nil {
			return err
		}
		out = pr
		return tokenUsable(pr, t)
	})
	return out, err
}

func (s *sqlStore) ProvisioningTokenUse(ctx context.Context, p ProvisioningTokenParams) (Provisioning, error) {
	if err := checkTokenHash(p.TokenHash); err != nil {
		return Provisioning{}, err
	}
	if err := checkID("join_id", p.JoinID); err != nil {
		return Provisioning{}, err
	}
	t := now(p.Now)
	var out Provisioning
	err := s.tx(ctx, "use provisioning token", func(ex sqldb.Execer) error {
		pr, err := s.provisioningByToken(ctx, ex, p.TokenHash)
		if err != nil {
			return err
		}
		if err := tokenUsable(pr, t); err != nil {
			return err
		}
		if _, err := s.joinGet(ctx, ex, s.q.JoinGet, p.JoinID); err != nil {
			return err
		}
		addrs, _ := json.Marshal(nonNil(pr.Addresses))
		// The token is spent in the same statement that moves the record: of two joins racing with
		// one token, the second finds the state moved and is refused as a reuse.
		moved, err := scanProvisioning(ex.QueryRow(ctx, s.q.ProvisioningSet, pr.ID, string(pr.State), string(ProvJoining), t,
			pr.InstanceID, string(addrs), p.TokenHash, at(pr.TokenExpiresAt), t, p.JoinID, pr.NodeID, pr.Reason, pr.Cleanup,
			at(pr.CleanupAt), t, nil, pr.UpdatedAt))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ProvisionTokenUsed, "this provisioning token was used by another join at the same moment").
				With(errcode.DetailID, pr.ID)
		}
		if err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.JoinSetHold, p.JoinID, pr.ID, ""); err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.ProvisioningEventInsert, pr.ID, t, AuthorPlane, string(ProvJoining),
			"join "+p.JoinID+" used the token"); err != nil {
			return err
		}
		out = moved
		return nil
	})
	return out, err
}

func (s *sqlStore) JoinHold(ctx context.Context, p JoinHoldParams) (Join, error) {
	if err := checkID("id", p.ID); err != nil {
		return Join{}, err
	}
	if err := checkDetail("reason", p.Reason); err != nil {
		return Join{}, err
	}
	var j Join
	err := s.tx(ctx, "hold join", func(ex sqldb.Execer) error {
		cur, err := s.joinGet(ctx, ex, s.q.JoinGet, p.ID)
		if err != nil {
			return err
		}
		if cur.Status != JoinPending {
			return errcode.New(errcode.JoinNotPending, "join %s is %s", p.ID, cur.Status).With(errcode.DetailState, string(cur.Status))
		}
		pid := p.ProvisioningID
		if pid == "" {
			pid = cur.ProvisioningID
		}
		if _, err := ex.Exec(ctx, s.q.JoinSetHold, p.ID, pid, p.Reason); err != nil {
			return err
		}
		j, err = s.joinGet(ctx, ex, s.q.JoinGet, p.ID)
		return err
	})
	return j, err
}

func (s *sqlStore) ProvisioningAdopt(ctx context.Context, p ProvisioningAdoptParams) (Provisioning, error) {
	if !ValidAccountName(p.Account) {
		return Provisioning{}, invalid("account", "account %q is not an account name", p.Account)
	}
	if err := checkProviderID("instance_id", p.InstanceID); err != nil {
		return Provisioning{}, err
	}
	if err := checkID("node_id", p.NodeID); err != nil {
		return Provisioning{}, err
	}
	for _, a := range p.Addresses {
		if _, err := netip.ParseAddr(a); err != nil {
			return Provisioning{}, invalid("addresses", "%q is not an IP address", a)
		}
	}
	if err := checkActor(p.By); err != nil {
		return Provisioning{}, err
	}
	t := now(p.Now)
	id := s.ids.next("prov_", t)
	var out Provisioning
	err := s.tx(ctx, "adopt instance", func(ex sqldb.Execer) error {
		n, err := scanNode(ex.QueryRow(ctx, s.q.NodeGet, p.NodeID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.NodeNotFound, "no node %s", p.NodeID).With(errcode.DetailNodeID, p.NodeID)
		}
		if err != nil {
			return err
		}
		if n.State != NodeActive {
			return errcode.New(errcode.NodeNotActive, "node %s is %s", n.ID, n.State).With(errcode.DetailState, string(n.State)).
				With(errcode.DetailID, n.ID)
		}
		addrs, _ := json.Marshal(nonNil(p.Addresses))
		if _, err := ex.Exec(ctx, s.q.ProvisioningAdoptInsert, id, n.Name, p.Account, t, p.InstanceID, string(addrs), n.ID, p.By); err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.ProvisioningEventInsert, id, t, p.By, string(ProvJoined),
			fmt.Sprintf("adopted instance %s of %s for node %s", p.InstanceID, p.Account, n.Name)); err != nil {
			return err
		}
		out, err = s.provisioningGet(ctx, ex, id)
		return err
	})
	return out, err
}

func scanProvisioning(r sqldb.Row, extra ...any) (Provisioning, error) {
	var pr Provisioning
	var labels, addrs []byte
	var state string
	dst := []any{&pr.ID, &pr.Name, &pr.Account, &pr.Region, &pr.Type, &pr.Image, &pr.Platform, &labels, &pr.DNSAccount, &pr.DNSZone,
		&pr.Tag, &state, stamp{&pr.StateAt}, &pr.InstanceID, &addrs, stamp{&pr.TokenExpiresAt}, stamp{&pr.TokenUsedAt},
		&pr.JoinID, &pr.NodeID, &pr.Reason, &pr.Cleanup, stamp{&pr.CleanupAt}, &pr.CreatedBy, stamp{&pr.CreatedAt},
		stamp{&pr.UpdatedAt}, stamp{&pr.FinishedAt}, &pr.TransferUsed, &pr.TransferAllowance, stamp{&pr.TransferAt}}
	if err := r.Scan(append(dst, extra...)...); err != nil {
		return Provisioning{}, err
	}
	pr.State = ProvisioningState(state)
	if err := json.Unmarshal(labels, &pr.Labels); err != nil {
		return Provisioning{}, err
	}
	if len(pr.Labels) == 0 {
		pr.Labels = nil
	}
	if err := json.Unmarshal(addrs, &pr.Addresses); err != nil {
		return Provisioning{}, err
	}
	if len(pr.Addresses) == 0 {
		pr.Addresses = nil
	}
	return pr, nil
}

func (s *sqlStore) ProvisioningTransferSet(ctx context.Context, p ProvisioningTransferParams) (Provisioning, error) {
	if err := checkID("id", p.ID); err != nil {
		return Provisioning{}, err
	}
	if p.Used < 0 || p.Allowance < 0 {
		return Provisioning{}, invalid("used", "transfer figures cannot be negative")
	}
	var out Provisioning
	err := s.write(ctx, "record transfer", func(ex sqldb.Execer) error {
		var err error
		out, err = scanProvisioning(ex.QueryRow(ctx, s.q.ProvisioningTransferSet, p.ID, p.Used, p.Allowance, now(p.Now)))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ProvisionNotFound, "no joined provisioning %s with an instance", p.ID).With(errcode.DetailID, p.ID)
		}
		return err
	})
	return out, err
}
