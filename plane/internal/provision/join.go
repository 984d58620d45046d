package provision

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// JoinStore is what a join carrying a provisioning token reads and writes.
type JoinStore interface {
	JoinCreate(ctx context.Context, p store.JoinCreateParams) (store.JoinCreateResult, error)
	JoinGet(ctx context.Context, p store.JoinGetParams) (store.Join, error)
	ProvisioningTokenCheck(ctx context.Context, p store.ProvisioningTokenParams) (store.Provisioning, error)
	ProvisioningTokenUse(ctx context.Context, p store.ProvisioningTokenParams) (store.Provisioning, error)
	EnrolmentTokenCheck(ctx context.Context, p store.EnrolmentTokenParams) (store.Enrolment, error)
	EnrolmentTokenUse(ctx context.Context, p store.EnrolmentTokenParams) (store.Enrolment, error)
	JoinApprove(ctx context.Context, p store.JoinApproveParams) (store.JoinApproveResult, error)
	NodeLabel(ctx context.Context, p store.NodeLabelParams) (store.Node, error)
}

// Join records a join that carries a provisioning token and spends the token on it. The token must
// match a provisioning's, be unused and unexpired (provision.token_invalid, provision.token_used,
// provision.token_expired): a refused token records no join. The join is left pending; the engine
// approves it after asking the provider (Engine.join). The same key asking again for the join its
// token already made gets that join back, so an agent whose answer was lost can retry.
func Join(ctx context.Context, st JoinStore, token string, p store.JoinCreateParams) (store.JoinCreateResult, error) {
	if !LooksLikeToken(token) {
		return store.JoinCreateResult{}, errcode.New(errcode.ProvisionTokenInvalid, "the token is not a provisioning token").
			With(errcode.DetailField, "token")
	}
	hash := TokenHash(token)
	pr, err := st.ProvisioningTokenCheck(ctx, store.ProvisioningTokenParams{TokenHash: hash, Now: p.Now})
	if errcode.Has(err, errcode.ProvisionTokenInvalid) {
		return enrolJoin(ctx, st, hash, p)
	}
	if errcode.Has(err, errcode.ProvisionTokenUsed) && pr.JoinID != "" {
		if j, jerr := st.JoinGet(ctx, store.JoinGetParams{ID: pr.JoinID, Now: p.Now}); jerr == nil && j.Fingerprint == p.Fingerprint {
			if j.Status != store.JoinPending {
				return store.JoinCreateResult{Join: j}, nil
			}
			return st.JoinCreate(ctx, p) // renews the same pending join
		}
	}
	if err != nil {
		return store.JoinCreateResult{}, err
	}
	res, err := st.JoinCreate(ctx, p)
	if err != nil {
		return res, err
	}
	if _, err := st.ProvisioningTokenUse(ctx, store.ProvisioningTokenParams{TokenHash: hash, JoinID: res.Join.ID, Now: p.Now}); err != nil {
		// Another join spent the token between the check and now: this one stays an ordinary pending
		// join for a person, and its agent is told the token was refused.
		return store.JoinCreateResult{}, err
	}
	res.Join.ProvisioningID = pr.ID
	return res, nil
}

// EnrolmentActor is who approved a join an install command's token made, for the record.
func EnrolmentActor(enrolmentID string) string { return "enrolment:" + enrolmentID }

// enrolJoin records a join that carries an install command's token (an enrolment) and spends the token
// on it; an enrolment that asked for it approves the join at once, the token vouching for the machine
// as the provider does for a provisioned one, and labels the node. An approval the store refuses (the
// name is taken) leaves the join pending for a person. The same key asking again gets its join back.
func enrolJoin(ctx context.Context, st JoinStore, hash string, p store.JoinCreateParams) (store.JoinCreateResult, error) {
	en, err := st.EnrolmentTokenCheck(ctx, store.EnrolmentTokenParams{TokenHash: hash, Now: p.Now})
	if errcode.Has(err, errcode.ProvisionTokenUsed) && en.JoinID != "" {
		if j, jerr := st.JoinGet(ctx, store.JoinGetParams{ID: en.JoinID, Now: p.Now}); jerr == nil && j.Fingerprint == p.Fingerprint {
			if j.Status != store.JoinPending {
				return store.JoinCreateResult{Join: j}, nil
			}
			return st.JoinCreate(ctx, p)
		}
	}
	if err != nil {
		return store.JoinCreateResult{}, err
	}
	res, err := st.JoinCreate(ctx, p)
	if err != nil {
		return res, err
	}
	if en, err = st.EnrolmentTokenUse(ctx, store.EnrolmentTokenParams{TokenHash: hash, JoinID: res.Join.ID, Now: p.Now}); err != nil {
		return store.JoinCreateResult{}, err
	}
	if !en.Approve {
		return res, nil
	}
	by := EnrolmentActor(en.ID)
	ap, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: res.Join.ID, Fingerprint: res.Join.Fingerprint, By: by, Now: p.Now})
	if err != nil {
		if errcode.Code(err) == "" {
			return store.JoinCreateResult{}, err
		}
		return res, nil // refused by a rule (a name taken): a person decides
	}
	res.Join = ap.Join
	if len(en.Labels) > 0 {
		if _, err := st.NodeLabel(ctx, store.NodeLabelParams{ID: ap.Node.ID, Set: en.Labels, By: by, Now: p.Now}); err != nil {
			return store.JoinCreateResult{}, err
		}
	}
	return res, nil
}
