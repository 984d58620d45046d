package sqlstore

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Enrolment limits. The caps bound what an unauthenticated caller can make the plane store; they can be
// set per call (store.JoinTTL is the default TTL).
const (
	defaultJoinMaxPending      = 500
	defaultJoinMaxPerSource    = 50
	maxJoinAddresses           = 32
	maxAddressLen              = 255
	maxNodeKeyLen              = 512
	nodeKeyPrefix              = "node-key:"
	maxActorLen                = MaxTokenName
	maxJoinTTL                 = 24 * time.Hour
	retiredByJoinRejection     = "join rejected"
	retiredByNodeDisconnection = "node disconnected"
	retiredByNodeLeaving       = "node left"
)

// fingerprintRE is the form of a key's fingerprint, as operators compare it.
var fingerprintRE = regexp.MustCompile(`^SHA256:[A-Za-z0-9+/]{43}$`)

func checkName(field, name string) error {
	if !ValidNodeName(name) {
		return invalid(field, "name %q must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

func checkID(field, id string) error {
	if id == "" || len(id) > 64 {
		return invalid(field, "%s must be an id", field)
	}
	return nil
}

func checkActor(by string) error {
	if len(by) > maxActorLen {
		return invalid("by", "actor is over %d bytes", maxActorLen)
	}
	return nil
}

func checkFingerprint(field, fp string) error {
	if !fingerprintRE.MatchString(fp) {
		return invalid(field, "fingerprint must be SHA256: and 43 characters of unpadded base64")
	}
	return nil
}

func joinTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return JoinTTL, nil
	case ttl < 0 || ttl > maxJoinTTL:
		return 0, invalid("ttl", "join ttl %s is outside (0, %s]", ttl, maxJoinTTL)
	}
	return ttl, nil
}

func checkJoinCreate(p *JoinCreateParams) error {
	if err := checkName("name", p.Name); err != nil {
		return err
	}
	if !strings.HasPrefix(p.Key, nodeKeyPrefix) || len(p.Key) == len(nodeKeyPrefix) || len(p.Key) > maxNodeKeyLen {
		return invalid("key", "key must be %s... and at most %d bytes", nodeKeyPrefix, maxNodeKeyLen)
	}
	if err := checkFingerprint("fingerprint", p.Fingerprint); err != nil {
		return err
	}
	if len(p.Addresses) > maxJoinAddresses {
		return invalid("addresses", "%d addresses, at most %d", len(p.Addresses), maxJoinAddresses)
	}
	for _, a := range p.Addresses {
		if a == "" || len(a) > maxAddressLen {
			return invalid("addresses", "an address must be 1 to %d bytes", maxAddressLen)
		}
	}
	if p.SourceAddress == "" || len(p.SourceAddress) > maxAddressLen {
		return invalid("source_address", "source address must be 1 to %d bytes", maxAddressLen)
	}
	if p.MaxPending < 0 || p.MaxPendingPerSource < 0 {
		return invalid("max_pending", "caps cannot be negative")
	}
	return nil
}

func (s *sqlStore) JoinCreate(ctx context.Context, p JoinCreateParams) (JoinCreateResult, error) {
	if err := checkJoinCreate(&p); err != nil {
		return JoinCreateResult{}, err
	}
	ttl, err := joinTTL(p.TTL)
	if err != nil {
		return JoinCreateResult{}, err
	}
	maxAll, maxSource := p.MaxPending, p.MaxPendingPerSource
	if maxAll == 0 {
		maxAll = defaultJoinMaxPending
	}
	if maxSource == 0 {
		maxSource = defaultJoinMaxPerSource
	}
	t := now(p.Now)
	addrs := p.Addresses
	if addrs == nil {
		addrs = []string{}
	}
	addrJSON, _ := json.Marshal(addrs)

	var res JoinCreateResult
	err = s.tx(ctx, "create join", func(ex sqldb.Execer) error {
		if s.q.JoinLock != "" {
			if _, err := ex.Exec(ctx, s.q.JoinLock); err != nil {
				return err
			}
		}
		if err := s.keyUsable(ctx, ex, p.Fingerprint); err != nil {
			return err
		}
		pending, err := scanJoin(ex.QueryRow(ctx, s.q.JoinPendingByKey, p.Fingerprint))
		switch {
		case err == nil && t.Before(pending.ExpiresAt):
			// The same key asking again while its join waits: renew it, keep its id.
			pending.ExpiresAt = t.Add(ttl)
			if _, err := ex.Exec(ctx, s.q.JoinSetExpires, pending.ID, pending.ExpiresAt); err != nil {
				return err
			}
			res = JoinCreateResult{Join: pending, Renewed: true}
			return nil
		case err == nil:
			// Its old join expired: record that, and make a new one below.
			if _, err := ex.Exec(ctx, s.q.JoinSetStatus, pending.ID, string(JoinExpired)); err != nil {
				return err
			}
		case s.drv.Kind(err) != sqldb.ErrNoRows:
			return err
		}
		var all, fromSource int64
		if err := ex.QueryRow(ctx, s.q.JoinCount, t, p.SourceAddress).Scan(&all, &fromSource); err != nil {
			return err
		}
		if all >= int64(maxAll) {
			return errcode.New(errcode.JoinTooMany, "%d joins are already waiting for approval", all).
				With(errcode.DetailScope, "all").With(errcode.DetailMax, maxAll)
		}
		if fromSource >= int64(maxSource) {
			return errcode.New(errcode.JoinTooMany, "%d joins from %s are already waiting for approval", fromSource, p.SourceAddress).
				With(errcode.DetailScope, "source").With(errcode.DetailMax, maxSource)
		}
		j := Join{
			ID: s.ids.next("join_", t), Name: p.Name, Key: p.Key, Fingerprint: p.Fingerprint,
			Addresses: addrs, SourceAddress: p.SourceAddress, Status: JoinPending,
			CreatedAt: t, ExpiresAt: t.Add(ttl),
		}
		if _, err := ex.Exec(ctx, s.q.JoinInsert, j.ID, j.Name, j.Key, j.Fingerprint, string(addrJSON),
			j.SourceAddress, j.CreatedAt, j.ExpiresAt); err != nil {
			return err
		}
		res = JoinCreateResult{Join: j}
		return nil
	})
	return res, err
}

// keyUsable refuses a key that was retired or already belongs to a node.
func (s *sqlStore) keyUsable(ctx context.Context, ex sqldb.Execer, fingerprint string) error {
	var retired bool
	if err := ex.QueryRow(ctx, s.q.KeyRetired, fingerprint).Scan(&retired); err != nil {
		return err
	}
	if retired {
		return errcode.New(errcode.JoinKeyRetired, "key %s is retired; make a fresh key and join again", fingerprint).
			With(errcode.DetailFingerprint, fingerprint)
	}
	n, err := scanNode(ex.QueryRow(ctx, s.q.NodeGetByKey, fingerprint))
	switch {
	case err == nil:
		return errcode.New(errcode.JoinKeyEnrolled, "key %s already belongs to node %s", fingerprint, n.ID).
			With(errcode.DetailNodeID, n.ID)
	case s.drv.Kind(err) != sqldb.ErrNoRows:
		return err
	}
	return nil
}

func (s *sqlStore) JoinGet(ctx context.Context, p JoinGetParams) (Join, error) {
	if err := checkID("id", p.ID); err != nil {
		return Join{}, err
	}
	var j Join
	err := s.read(ctx, "get join", func(ex sqldb.Execer) error {
		var err error
		j, err = s.joinGet(ctx, ex, s.q.JoinGet, p.ID)
		return err
	})
	return settle(j, now(p.Now)), err
}

func (s *sqlStore) joinGet(ctx context.Context, ex sqldb.Execer, query, id string) (Join, error) {
	j, err := scanJoin(ex.QueryRow(ctx, query, id))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Join{}, errcode.New(errcode.JoinNotFound, "no join %s", id).With(errcode.DetailID, id)
	}
	return j, err
}

// settle shows a pending join past its expiry as expired.
func settle(j Join, t time.Time) Join {
	if j.Status == JoinPending && !t.Before(j.ExpiresAt) {
		j.Status = JoinExpired
	}
	return j
}

func (s *sqlStore) JoinList(ctx context.Context, p JoinListParams) (JoinListResult, error) {
	switch p.Status {
	case "", JoinPending, JoinApproved, JoinRejected, JoinExpired:
	default:
		return JoinListResult{}, invalid("status", "unknown join status %q", p.Status)
	}
	if err := checkCursor(p.Cursor); err != nil {
		return JoinListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return JoinListResult{}, err
	}
	t := now(p.Now)
	var res JoinListResult
	err = s.read(ctx, "list joins", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.JoinList, string(p.Status), t, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			j, err := scanJoin(rs)
			if err != nil {
				return err
			}
			res.Joins = append(res.Joins, settle(j, t))
		}
		return rs.Err()
	})
	if len(res.Joins) > limit {
		res.Joins = res.Joins[:limit]
		res.NextCursor = res.Joins[limit-1].ID
	}
	return res, err
}

func (s *sqlStore) JoinRenew(ctx context.Context, p JoinRenewParams) (Join, error) {
	if err := checkID("id", p.ID); err != nil {
		return Join{}, err
	}
	ttl, err := joinTTL(p.TTL)
	if err != nil {
		return Join{}, err
	}
	t := now(p.Now)
	var j Join
	err = s.tx(ctx, "renew join", func(ex sqldb.Execer) error {
		var err error
		if j, err = s.joinGet(ctx, ex, s.q.JoinGetForUpdate, p.ID); err != nil {
			return err
		}
		if err := pending(j, t); err != nil {
			return err
		}
		j.ExpiresAt = t.Add(ttl)
		_, err = ex.Exec(ctx, s.q.JoinSetExpires, j.ID, j.ExpiresAt)
		return err
	})
	return j, err
}

// pending refuses a join that was decided or has expired.
func pending(j Join, t time.Time) error {
	switch j = settle(j, t); j.Status {
	case JoinPending:
		return nil
	case JoinExpired:
		return errcode.New(errcode.JoinExpired, "join %s expired at %s; the agent must join again", j.ID,
			j.ExpiresAt.Format(time.RFC3339)).With(errcode.DetailID, j.ID)
	default:
		return errcode.New(errcode.JoinNotPending, "join %s is already %s", j.ID, j.Status).
			With(errcode.DetailID, j.ID).With(errcode.DetailStatus, string(j.Status))
	}
}

func (s *sqlStore) JoinApprove(ctx context.Context, p JoinApproveParams) (JoinApproveResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return JoinApproveResult{}, err
	}
	if p.Name != "" {
		if err := checkName("name", p.Name); err != nil {
			return JoinApproveResult{}, err
		}
	}
	if err := checkActor(p.By); err != nil {
		return JoinApproveResult{}, err
	}
	t := now(p.Now)
	var res JoinApproveResult
	err := s.tx(ctx, "approve join", func(ex sqldb.Execer) error {
		j, err := s.joinGet(ctx, ex, s.q.JoinGetForUpdate, p.ID)
		if err != nil {
			return err
		}
		if err := pending(j, t); err != nil {
			return err
		}
		// Exactly: no trimming, no case folding. The admin compares what the agent printed.
		if p.Fingerprint != j.Fingerprint {
			return errcode.New(errcode.JoinFingerprintMismatch,
				"fingerprint %q is not the fingerprint of join %s; compare again with what the agent printed", p.Fingerprint, j.ID).
				With(errcode.DetailID, j.ID)
		}
		if err := s.keyUsable(ctx, ex, j.Fingerprint); err != nil {
			return err
		}
		name := j.Name
		if p.Name != "" {
			name = p.Name
		}
		if other, err := scanNode(ex.QueryRow(ctx, s.q.NodeGetByName, name)); err == nil {
			return errcode.New(errcode.NodeNameTaken, "active node %s is already named %s; approve under another name", other.ID, name).
				With(errcode.DetailName, name).With(errcode.DetailNodeID, other.ID)
		} else if s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		n := Node{
			ID: s.ids.next("node_", t), Name: name, Key: j.Key, Fingerprint: j.Fingerprint,
			Addresses: j.Addresses, State: NodeActive, CreatedAt: t, Idle: true,
			Vocabulary: []WordRef{}, Recipes: json.RawMessage(`[]`), Labels: map[string]string{},
		}
		addrJSON, _ := json.Marshal(n.Addresses)
		if err := ex.QueryRow(ctx, s.q.NodeInsert, n.ID, n.Name, n.Key, n.Fingerprint, string(addrJSON), n.CreatedAt).Scan(&n.TargetSequence); err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.JoinDecide, j.ID, string(JoinApproved), t, p.By, n.ID); err != nil {
			return err
		}
		j.Status, j.DecidedAt, j.DecidedBy, j.NodeID = JoinApproved, t, p.By, n.ID
		res = JoinApproveResult{Join: j, Node: n}
		return nil
	})
	return res, err
}

func (s *sqlStore) JoinReject(ctx context.Context, p JoinRejectParams) (Join, error) {
	if err := checkID("id", p.ID); err != nil {
		return Join{}, err
	}
	if err := checkActor(p.By); err != nil {
		return Join{}, err
	}
	t := now(p.Now)
	var j Join
	err := s.tx(ctx, "reject join", func(ex sqldb.Execer) error {
		var err error
		if j, err = s.joinGet(ctx, ex, s.q.JoinGetForUpdate, p.ID); err != nil {
			return err
		}
		// An expired join can still be rejected: the admin may want its key never to come back.
		if j.Status != JoinPending && j.Status != JoinExpired {
			return errcode.New(errcode.JoinNotPending, "join %s is already %s", j.ID, j.Status).
				With(errcode.DetailID, j.ID).With(errcode.DetailStatus, string(j.Status))
		}
		if _, err := ex.Exec(ctx, s.q.JoinDecide, j.ID, string(JoinRejected), t, p.By, ""); err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.KeyRetire, j.Fingerprint, retiredByJoinRejection, t); err != nil {
			return err
		}
		j.Status, j.DecidedAt, j.DecidedBy = JoinRejected, t, p.By
		return nil
	})
	return j, err
}

func (s *sqlStore) JoinExpire(ctx context.Context, p JoinExpireParams) (int64, error) {
	var n int64
	err := s.tx(ctx, "expire joins", func(ex sqldb.Execer) error {
		var err error
		n, err = ex.Exec(ctx, s.q.JoinExpireAll, now(p.Now))
		return err
	})
	return n, err
}

func scanJoin(r sqldb.Row) (Join, error) {
	var j Join
	var addrs []byte
	var status string
	if err := r.Scan(&j.ID, &j.Name, &j.Key, &j.Fingerprint, &addrs, &j.SourceAddress, &status,
		stamp{&j.CreatedAt}, stamp{&j.ExpiresAt}, stamp{&j.DecidedAt}, &j.DecidedBy, &j.NodeID, &j.ProvisioningID, &j.HoldReason); err != nil {
		return Join{}, err
	}
	j.Status = JoinStatus(status)
	if err := json.Unmarshal(addrs, &j.Addresses); err != nil {
		return Join{}, err
	}
	return j, nil
}
