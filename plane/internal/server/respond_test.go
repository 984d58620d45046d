package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestStatusOfCodes pins the HTTP status of every code as the plane answered it before the statuses
// moved into the codes table, so a change of status is a deliberate edit here and not a side effect.
func TestStatusOfCodes(t *testing.T) {
	cases := map[string]int{
		errcode.AccountExists:               http.StatusConflict,
		errcode.AccountKeyMismatch:          http.StatusInternalServerError,
		errcode.AccountNotFound:             http.StatusNotFound,
		errcode.AccountSealBroken:           http.StatusInternalServerError,
		errcode.AccountWrongKind:            http.StatusBadRequest,
		errcode.AgentBusy:                   http.StatusBadRequest,
		errcode.AgentNeedsNewerAgent:        http.StatusConflict,
		errcode.AgentUpdateRefused:          http.StatusUnprocessableEntity,
		errcode.ArtifactNotPinned:           http.StatusNotFound,
		errcode.JobNeedsNewerAgent:          http.StatusConflict,
		errcode.AgentJoinRejected:           http.StatusBadRequest,
		errcode.AgentNotJoined:              http.StatusConflict,
		errcode.AuthForbidden:               http.StatusForbidden,
		errcode.AuthCSRF:                    http.StatusForbidden,
		errcode.AuthSessionEnded:            http.StatusUnauthorized,
		errcode.AuthSignInLimited:           http.StatusTooManyRequests,
		errcode.AuthRequired:                http.StatusUnauthorized,
		errcode.CapabilityBudgetExceeded:    http.StatusBadRequest,
		errcode.CapabilityDenied:            http.StatusBadRequest,
		errcode.CapabilityFailed:            http.StatusBadRequest,
		errcode.CapabilityInvalid:           http.StatusBadRequest,
		errcode.CapabilityRootUnsafe:        http.StatusBadRequest,
		errcode.DriverUnconfined:            http.StatusConflict,
		errcode.JobWordMismatch:             http.StatusUnprocessableEntity,
		errcode.RebuildMismatch:             http.StatusUnprocessableEntity,
		errcode.RebuildFailed:               http.StatusUnprocessableEntity,
		errcode.RebuildNoSource:             http.StatusNotFound,
		errcode.CapabilityNotFound:          http.StatusNotFound,
		errcode.CapabilityTimeout:           http.StatusBadRequest,
		errcode.CapabilityUnknown:           http.StatusBadRequest,
		errcode.CaseCapped:                  http.StatusBadRequest,
		errcode.CaseClosed:                  http.StatusBadRequest,
		errcode.CaseInvalid:                 http.StatusBadRequest,
		errcode.CaseNotFound:                http.StatusNotFound,
		errcode.CaseSuperseded:              http.StatusBadRequest,
		errcode.CaseTooMany:                 http.StatusConflict,
		errcode.CaseTooManyOpen:             http.StatusBadRequest,
		errcode.ChannelBusy:                 http.StatusServiceUnavailable,
		errcode.ChannelClockSkew:            http.StatusUnauthorized,
		errcode.ChannelDigestMismatch:       http.StatusBadRequest,
		errcode.ChannelReplayed:             http.StatusUnauthorized,
		errcode.ChannelSignatureInvalid:     http.StatusUnauthorized,
		errcode.ChannelUnsigned:             http.StatusUnauthorized,
		errcode.CloudAuth:                   http.StatusBadRequest,
		errcode.CloudConflict:               http.StatusBadRequest,
		errcode.CloudConfirmMismatch:        http.StatusConflict,
		errcode.CloudSafetyCatch:            http.StatusForbidden,
		errcode.CloudInvalid:                http.StatusBadRequest,
		errcode.CloudNotFound:               http.StatusNotFound,
		errcode.CloudQuota:                  http.StatusBadRequest,
		errcode.CloudRateLimited:            http.StatusBadRequest,
		errcode.CloudUnavailable:            http.StatusBadRequest,
		errcode.CloudUnsupported:            http.StatusBadRequest,
		errcode.ContractBroken:              http.StatusBadRequest,
		errcode.DNSAuth:                     http.StatusBadRequest,
		errcode.DNSConflict:                 http.StatusBadRequest,
		errcode.DNSInvalid:                  http.StatusBadRequest,
		errcode.DNSNotFound:                 http.StatusNotFound,
		errcode.DNSRateLimited:              http.StatusBadRequest,
		errcode.DNSUnavailable:              http.StatusBadRequest,
		errcode.DNSUnsupported:              http.StatusBadRequest,
		errcode.DriverConfigInvalid:         http.StatusBadRequest,
		errcode.DriverCrashed:               http.StatusBadGateway,
		errcode.DriverDisabled:              http.StatusConflict,
		errcode.DriverInternal:              http.StatusBadGateway,
		errcode.DriverNotConfigured:         http.StatusConflict,
		errcode.DriverNotPinned:             http.StatusConflict,
		errcode.DriverStartFailed:           http.StatusBadGateway,
		errcode.DriverTimeout:               http.StatusGatewayTimeout,
		errcode.DriverUnavailable:           http.StatusServiceUnavailable,
		errcode.DriverVersionMismatch:       http.StatusBadRequest,
		errcode.IncidentNotFound:            http.StatusNotFound,
		errcode.InternalError:               http.StatusInternalServerError,
		errcode.IOFailed:                    http.StatusBadRequest,
		errcode.JobCancelled:                http.StatusBadRequest,
		errcode.JobFinished:                 http.StatusConflict,
		errcode.JobLost:                     http.StatusBadRequest,
		errcode.JobMarkedFailed:             http.StatusBadRequest,
		errcode.JobNotFound:                 http.StatusNotFound,
		errcode.JobNotQueued:                http.StatusConflict,
		errcode.JobNotRunning:               http.StatusConflict,
		errcode.JobWordUnavailable:          http.StatusUnprocessableEntity,
		errcode.JoinExpired:                 http.StatusConflict,
		errcode.JoinFingerprintMismatch:     http.StatusConflict,
		errcode.JoinKeyEnrolled:             http.StatusConflict,
		errcode.JoinKeyRetired:              http.StatusConflict,
		errcode.JoinNotFound:                http.StatusNotFound,
		errcode.JoinNotPending:              http.StatusConflict,
		errcode.JoinTooMany:                 http.StatusConflict,
		errcode.KeyChainInvalid:             http.StatusUnprocessableEntity,
		errcode.KeyFileUntrusted:            http.StatusUnprocessableEntity,
		errcode.KeyMalformed:                http.StatusUnprocessableEntity,
		errcode.KeyRetired:                  http.StatusUnprocessableEntity,
		errcode.LogUnavailable:              http.StatusBadRequest,
		errcode.ManifestInvalid:             http.StatusBadRequest,
		errcode.ManifestMalformed:           http.StatusBadRequest,
		errcode.ManifestParamsOpen:          http.StatusBadRequest,
		errcode.ManifestSchemaInvalid:       http.StatusBadRequest,
		errcode.ManifestUnknownField:        http.StatusBadRequest,
		errcode.ModuleDigestMismatch:        http.StatusUnprocessableEntity,
		errcode.ModuleNotFound:              http.StatusNotFound,
		errcode.ModuleNotPinned:             http.StatusUnprocessableEntity,
		errcode.NodeNameTaken:               http.StatusConflict,
		errcode.NodeLabelInvalid:            http.StatusUnprocessableEntity,
		errcode.NodeFilterInvalid:           http.StatusBadRequest,
		errcode.NodeNotActive:               http.StatusForbidden,
		errcode.NodeNotFound:                http.StatusNotFound,
		errcode.NotificationLeaseLost:       http.StatusBadRequest,
		errcode.NotificationNotFound:        http.StatusNotFound,
		errcode.PlaneUnexpected:             http.StatusBadRequest,
		errcode.PlaneUnreachable:            http.StatusBadRequest,
		errcode.ReplicaAlive:                http.StatusConflict,
		errcode.ReplicaNotFound:             http.StatusNotFound,
		errcode.ReplicaNotReady:             http.StatusServiceUnavailable,
		errcode.PolicyRefused:               http.StatusBadRequest,
		errcode.ProvisionNotFound:           http.StatusNotFound,
		errcode.ProvisionNameTaken:          http.StatusConflict,
		errcode.ProvisionUnknownRegion:      http.StatusBadRequest,
		errcode.ProvisionUnknownType:        http.StatusBadRequest,
		errcode.ProvisionTokenInvalid:       http.StatusForbidden,
		errcode.ProvisionTokenUsed:          http.StatusConflict,
		errcode.ProvisionTokenExpired:       http.StatusForbidden,
		errcode.ProvisionAddressMismatch:    http.StatusConflict,
		errcode.PolicyUntrusted:             http.StatusBadRequest,
		errcode.RecipeInterrupted:           http.StatusBadRequest,
		errcode.RecipeNoVerdict:             http.StatusBadRequest,
		errcode.RecipeParamsNotDerived:      http.StatusBadRequest,
		errcode.ReleaseNotFound:             http.StatusNotFound,
		errcode.ReleaseRollback:             http.StatusConflict,
		errcode.RolloutNotFound:             http.StatusNotFound,
		errcode.RolloutSelectorInvalid:      http.StatusBadRequest,
		errcode.RolloutSelectorUnknownKey:   http.StatusBadRequest,
		errcode.RolloutEmptySelection:       http.StatusUnprocessableEntity,
		errcode.RolloutStagesIncomplete:     http.StatusBadRequest,
		errcode.RolloutWordNotInRelease:     http.StatusUnprocessableEntity,
		errcode.RolloutWrongState:           http.StatusConflict,
		errcode.RolloutNodeBusy:             http.StatusConflict,
		errcode.RolloutRevertNeedsReissue:   http.StatusConflict,
		errcode.LeaseHeld:                   http.StatusConflict,
		errcode.LeaseLost:                   http.StatusConflict,
		errcode.RequestMalformed:            http.StatusBadRequest,
		errcode.RequestRateLimited:          http.StatusTooManyRequests,
		errcode.RequestTooLarge:             http.StatusRequestEntityTooLarge,
		errcode.RouteNotFound:               http.StatusNotFound,
		errcode.RouteMethodNotAllowed:       http.StatusMethodNotAllowed,
		errcode.StatementExpired:            http.StatusUnprocessableEntity,
		errcode.StatementInvalid:            http.StatusUnprocessableEntity,
		errcode.StatementMalformed:          http.StatusUnprocessableEntity,
		errcode.StatementRollback:           http.StatusUnprocessableEntity,
		errcode.StatementSignatureInvalid:   http.StatusUnprocessableEntity,
		errcode.StatementSubjectDuplicate:   http.StatusUnprocessableEntity,
		errcode.StatementTooLarge:           http.StatusUnprocessableEntity,
		errcode.StatementUnlogged:           http.StatusUnprocessableEntity,
		errcode.StatementLogInconsistent:    http.StatusUnprocessableEntity,
		errcode.StatementUnwitnessed:        http.StatusUnprocessableEntity,
		errcode.StoreBusy:                   http.StatusServiceUnavailable,
		errcode.StoreClosed:                 http.StatusServiceUnavailable,
		errcode.StoreMigrationFailed:        http.StatusBadRequest,
		errcode.StoreParamInvalid:           http.StatusUnprocessableEntity,
		errcode.StoreSchemaNewer:            http.StatusBadRequest,
		errcode.StoreUnavailable:            http.StatusServiceUnavailable,
		errcode.StoreURLInvalid:             http.StatusBadRequest,
		errcode.TokenExists:                 http.StatusConflict,
		errcode.TokenNameInvalid:            http.StatusUnprocessableEntity,
		errcode.TokenRoleInvalid:            http.StatusUnprocessableEntity,
		errcode.TokenNotFound:               http.StatusNotFound,
		errcode.TokenRevoked:                http.StatusBadRequest,
		errcode.UsageInvalid:                http.StatusBadRequest,
		errcode.WebhookConfigInvalid:        http.StatusBadRequest,
		errcode.WebhookDeliveryFailed:       http.StatusBadRequest,
		errcode.WordCancelled:               http.StatusBadRequest,
		errcode.WordCrashed:                 http.StatusBadRequest,
		errcode.WordDeadlineExceeded:        http.StatusBadRequest,
		errcode.WordFailed:                  http.StatusBadRequest,
		errcode.WordHostFailed:              http.StatusBadRequest,
		errcode.WordMemoryExceeded:          http.StatusBadRequest,
		errcode.WordModuleInvalid:           http.StatusBadRequest,
		errcode.WordOutputInvalid:           http.StatusBadRequest,
		errcode.WordOutputTooLarge:          http.StatusBadRequest,
		errcode.WordParamInvalid:            http.StatusUnprocessableEntity,
		errcode.WordSiblingStopped:          http.StatusBadRequest,
		errcode.WordTranscriptTooLarge:      http.StatusBadRequest,
		errcode.WordVersionMismatch:         http.StatusBadRequest,
		errcode.KeyAlgorithmRetired:         http.StatusUnprocessableEntity,
		errcode.StatementFormatRetired:      http.StatusUnprocessableEntity,
		errcode.PkgLocked:                   http.StatusConflict,
		errcode.PkgOperationRefused:         http.StatusBadRequest,
		errcode.PkgOriginRefused:            http.StatusBadRequest,
		errcode.PkgNameRefused:              http.StatusBadRequest,
		errcode.PkgHeld:                     http.StatusConflict,
		errcode.PkgNotInstalled:             http.StatusNotFound,
		errcode.PkgWouldRemove:              http.StatusConflict,
		errcode.PkgUnresolvable:             http.StatusConflict,
		errcode.PkgFailed:                   http.StatusBadRequest,
		errcode.PkgRefreshFailed:            http.StatusBadGateway,
		errcode.BackupCredentialsInvalid:    http.StatusBadGateway,
		errcode.BackupDatabaseMissing:       http.StatusBadRequest,
		errcode.BackupDatabaseRefused:       http.StatusBadRequest,
		errcode.BackupDumpFailed:            http.StatusBadGateway,
		errcode.BackupGrantExhausted:        http.StatusBadRequest,
		errcode.BackupGrantInvalid:          http.StatusBadRequest,
		errcode.BackupGrantMissing:          http.StatusBadRequest,
		errcode.BackupManifestInvalid:       http.StatusUnprocessableEntity,
		errcode.BackupNodeKeyMissing:        http.StatusBadRequest,
		errcode.BackupNotConfigured:         http.StatusBadRequest,
		errcode.BackupObjectExists:          http.StatusConflict,
		errcode.BackupObjectMissing:         http.StatusNotFound,
		errcode.BackupPathRefused:           http.StatusBadRequest,
		errcode.BackupRestoreTargetNotEmpty: http.StatusConflict,
		errcode.BackupTargetRefused:         http.StatusBadGateway,
		errcode.BackupTargetUnreachable:     http.StatusBadGateway,
		errcode.BackupVerifyFailed:          http.StatusUnprocessableEntity,
		errcode.FootprintDigestMismatch:     http.StatusBadGateway,
		errcode.FootprintInvalid:            http.StatusBadRequest,
		errcode.FootprintItemsFailed:        http.StatusBadRequest,
		errcode.FootprintNoRecord:           http.StatusNotFound,
		errcode.FootprintRefused:            http.StatusBadRequest,
		errcode.FootprintTooLarge:           http.StatusRequestEntityTooLarge,
		errcode.PlaneUntrusted:              http.StatusBadRequest,
		errcode.ReleaseAgentMismatch:        http.StatusUnprocessableEntity,
		errcode.UsageInterrupted:            http.StatusBadRequest,
	}
	for code, want := range cases {
		if got := status(code); got != want {
			t.Errorf("status(%s) = %d, want %d", code, got, want)
		}
	}
	for _, s := range errcode.All() {
		if _, ok := cases[s.Code]; !ok {
			t.Errorf("%s has no pinned status here", s.Code)
		}
	}
	// A code the table does not declare (a driver's or a word's own) is the plane's failure to explain.
	if got := status("restart_unit.failed"); got != http.StatusInternalServerError {
		t.Errorf("status of an undeclared code = %d, want 500", got)
	}
}

func TestLimiterPerKey(t *testing.T) {
	l := newLimiter(1, 2)
	refused := 0
	l.refused = func() { refused++ } // the plane's rate_limited_total
	now := time.Unix(1000, 0)
	for i := range 2 {
		if err := l.allow("a", now); err != nil {
			t.Fatalf("burst request %d refused: %v", i, err)
		}
	}
	err := l.allow("a", now)
	if errcode.Code(err) != errcode.RequestRateLimited {
		t.Fatalf("over the burst: %v", err)
	}
	// Another key has its own bucket; a refused request took no token.
	if err := l.allow("b", now); err != nil {
		t.Fatalf("other key: %v", err)
	}
	if err := l.allow("a", now.Add(time.Second)); err != nil {
		t.Fatalf("after a second: %v", err)
	}
	if refused != 1 {
		t.Fatalf("%d refusals counted, want 1", refused)
	}
}
