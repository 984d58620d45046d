package server_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestDriverEnableUnconfinedConsent: on a plane where no protection of its files can be applied, an
// enable without consent answers driver.unconfined and enables nothing; one with {"unconfined": true}
// enables the driver, says so, and the audit log records the consent. A body that is not the route's
// JSON is refused.
func TestDriverEnableUnconfinedConsent(t *testing.T) {
	opts := goplugin.Options{MinBackoff: 20 * time.Millisecond, NoLandlock: true}
	if os.Geteuid() == 0 {
		opts.User = "no-such-user-here"
	}
	p := newDriverPlaneWith(t, opts)
	p.publish("memory")
	const admin, post = store.RoleAdmin, http.MethodPost

	refused := p.want(http.StatusConflict, errcode.DriverUnconfined, admin, post, "/drivers/dns-memory/enable", nil)
	if !strings.Contains(fmt.Sprint(refused), "--unconfined") {
		t.Fatalf("the refusal does not tell the admin what to pass: %v", refused)
	}
	p.want(http.StatusConflict, errcode.DriverUnconfined, admin, post, "/drivers/dns-memory/enable", api.DriverEnable{})
	p.want(http.StatusBadRequest, errcode.RequestMalformed, admin, post, "/drivers/dns-memory/enable", map[string]any{"unconfined": "yes"})
	list := p.want(http.StatusOK, "", admin, http.MethodGet, "/drivers", nil)
	for _, d := range list["drivers"].([]any) {
		if d.(map[string]any)["enabled"] == true {
			t.Fatalf("a refused enable enabled a driver: %v", list)
		}
	}

	on := p.want(http.StatusOK, "", admin, post, "/drivers/dns-memory/enable", api.DriverEnable{Unconfined: true})
	if on["enabled"] != true || on["unconfined"] != true {
		t.Fatalf("enable answered %v", on)
	}
	audit := p.want(http.StatusOK, "", admin, http.MethodGet, "/drivers/audit?driver=dns-memory", nil)
	calls := audit["calls"].([]any)
	newest := calls[0].(map[string]any)
	if len(calls) != 3 || newest["operation"] != "driver.enable" || newest["code"] != "ok" || newest["target"] != "unconfined" {
		t.Fatalf("audit %v", audit)
	}
	for _, c := range calls[1:] {
		if c.(map[string]any)["code"] != errcode.DriverUnconfined {
			t.Fatalf("audit %v", audit)
		}
	}
}
