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
