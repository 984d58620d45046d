package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func tokenHashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

var enrolmentTests = []test{
	{"Enrolment/SpentOnce", func(f *fx) {
		hash := tokenHashOf("lxp_one")
		e, err := f.s.EnrolmentCreate(f.ctx, store.EnrolmentCreateParams{TokenHash: hash, Labels: map[string]string{"tier": "web"},
			Approve: true, ExpiresAt: f.at(time.Hour), By: "root", Now: f.at(0)})
		noErr(f, err, "EnrolmentCreate")
		got, err := f.s.EnrolmentTokenCheck(f.ctx, store.EnrolmentTokenParams{TokenHash: hash, Now: f.at(time.Minute)})
		noErr(f, err, "EnrolmentTokenCheck")
		same(f, "checked", got, e)
		_, err = f.s.EnrolmentTokenCheck(f.ctx, store.EnrolmentTokenParams{TokenHash: tokenHashOf("lxp_other"), Now: f.at(0)})
		testkit.WantCode(f, err, errcode.ProvisionTokenInvalid)
		_, err = f.s.EnrolmentTokenUse(f.ctx, store.EnrolmentTokenParams{TokenHash: hash, JoinID: "join_1", Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.ProvisionTokenExpired)

		used, err := f.s.EnrolmentTokenUse(f.ctx, store.EnrolmentTokenParams{TokenHash: hash, JoinID: "join_1", Now: f.at(time.Minute)})
		noErr(f, err, "EnrolmentTokenUse")
		if used.JoinID != "join_1" || used.UsedAt.IsZero() || used.Labels["tier"] != "web" || !used.Approve {
			f.Fatalf("used %+v", used)
		}
		_, err = f.s.EnrolmentTokenUse(f.ctx, store.EnrolmentTokenParams{TokenHash: hash, JoinID: "join_2", Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.ProvisionTokenUsed)
		_, err = f.s.EnrolmentTokenCheck(f.ctx, store.EnrolmentTokenParams{TokenHash: hash, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.ProvisionTokenUsed)

		for i, p := range []store.EnrolmentCreateParams{
			{TokenHash: "short", ExpiresAt: f.at(time.Hour), By: "root", Now: f.at(0)},
			{TokenHash: tokenHashOf("b"), ExpiresAt: f.at(0), By: "root", Now: f.at(0)},
			{TokenHash: tokenHashOf("c"), Labels: map[string]string{"bad key": "v"}, ExpiresAt: f.at(time.Hour), By: "root", Now: f.at(0)},
		} {
			if _, err := f.s.EnrolmentCreate(f.ctx, p); !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad enrolment %d: %v", i, err)
			}
		}
	}},
}
