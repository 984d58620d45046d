// Package api is the plane's admin API: every route, its request and its answer. The plane serves it,
// and the lexicon CLI and the web UI call it; all build on these types and this route table, so they
// cannot disagree about a field. It imports only the standard library, sdk/errcode and the pure
// registry packages: a client links neither the store nor the server.
//
// Every route is under /api/v1/admin and needs an admin token, sent as "Authorization: Bearer lxt_...".
// Each route names the least role it needs (viewer < operator < admin); a token below it is refused
// with auth.forbidden (details.need), and a missing, unknown or revoked token with auth.required.
// Bodies are JSON and unknown fields are refused (request.malformed); a body over the route's cap is
// request.too_large. Errors use the errcode envelope {"error":{"code","message","details"}}, and a
// refused request changed nothing unless its code's documentation says otherwise. Lists answer an
// object holding the list (never null) and, where they page, next_cursor ("" on the last page), which
// the next request passes as ?cursor=.
//
//	GET  /whoami                                   viewer    -> Token
//	GET  /tokens                                   admin     -> TokenList      (never a secret)
//	POST /tokens                 TokenRequest      admin     -> NewToken       (201; the secret, shown once)
//	POST /tokens/{id}/revoke                       admin     -> Token          (its UI sessions end too)
//	GET  /joins      ?status&limit&cursor          viewer    -> JoinList
//	POST /joins/{id}/approve     ApproveRequest    admin     -> Approved
//	POST /joins/{id}/reject                        admin     -> Join
//	GET  /nodes      ?state&label&word&version&limit&cursor viewer -> NodeList
//	GET  /fleet                                    viewer    -> Fleet          (nodes counted, not listed)
//	GET  /nodes/{id}                               viewer    -> Node           ({id}: id or name)
//	POST /nodes/{id}/disconnect                    admin     -> Disconnected
//	POST /nodes/{id}/labels      LabelRequest      operator  -> Node
//	GET  /nodes/{id}/words/{word}                  viewer    -> Word           (params schema from the manifest)
//	POST /jobs                   JobRequest        operator  -> Job   (201; admin for a destructive word)
//	GET  /jobs       ?node&state&limit&cursor      viewer    -> JobList
//	GET  /jobs/{id}                                viewer    -> Job
//	POST /jobs/{id}/cancel                         operator  -> Job
//	POST /jobs/{id}/mark-failed  MarkFailedRequest operator  -> Job
//	GET  /incidents  ?needs_you&node&condition&limit&cursor viewer -> IncidentList
//	GET  /incidents/{id}                           viewer    -> IncidentDetail
//	POST /incidents/{id}/triage  TriageRequest     operator  -> IncidentChange
//	POST /incidents/{id}/notes   NoteRequest       operator  -> IncidentEvent  (201)
//	GET  /releases   ?limit                        viewer    -> ReleaseList
//	GET  /releases/{sequence}                      viewer    -> ReleaseDetail  (words, recipes, drivers, agents)
//	GET  /releases/{sequence}/diff/{to}            viewer    -> ReleaseDiff    (as lexicon-release diff)
//	POST /releases   ?deploy_all  tar stream       admin     -> Release        (201; with the checks)
//	POST /rollouts               RolloutRequest    operator  -> Rollout        (201; admin for a release)
//	GET  /rollouts   ?state&limit                  viewer    -> RolloutList
//	GET  /rollouts/{id}                            viewer    -> Rollout        (with steps and events)
//	POST /rollouts/{id}/pause                      operator  -> Rollout
//	POST /rollouts/{id}/resume                     operator  -> Rollout        (the role its start took)
//	POST /rollouts/{id}/abort                      operator  -> Rollout
//	POST /rollouts/{id}/revert                     admin     -> Rollout        (409 rollout.revert_needs_reissue)
//	GET  /drivers                                  viewer    -> DriverList
//	GET  /drivers/status                           viewer    -> StatusList
//	GET  /drivers/audit ?driver&account&limit&cursor viewer  -> DriverCallList
//	POST /drivers/{name}/enable   DriverEnable     admin     -> Driver
//	POST /drivers/{name}/disable                   admin     -> Driver
//	GET  /drivers/{name}/schema                    admin     -> DriverSchema   (an enabled driver's account settings)
//	GET  /accounts   ?driver                       viewer    -> AccountList
//	POST /accounts               AccountAdd        admin     -> Account        (201)
//	POST /accounts/{name}/remove                   admin     -> Account
//	POST /accounts/{name}/test   AccountTest       admin     -> Account        (mark or unmark a test account)
//	GET  /dns/{account}/zones                      operator  -> ZoneList
//	GET  /dns/{account}/zones/{zone}/records       operator  -> RecordList
//	POST /dns/{account}/zones/{zone}/reconcile Reconcile operator -> ReconcileReport
//	GET  /cloud/{account}/regions                  operator  -> RegionList
//	GET  /cloud/{account}/regions/{region}/types   operator  -> TypeList
//	GET  /cloud/{account}/instances ?page_size&page_token operator -> InstancePage
//	POST /cloud/{account}/instances CloudCreateRequest operator  -> Instance       (201)
//	GET  /cloud/{account}/instances/{id}           operator  -> Instance
//	POST /cloud/{account}/instances/{id}/delete CloudDeleteRequest admin -> Instance  (as it was; confirm = its label)
//	POST /cloud/{account}/instances/{id}/power-on  operator  -> CloudAccepted
//	POST /cloud/{account}/instances/{id}/power-off operator  -> CloudAccepted
//	POST /cloud/{account}/instances/{id}/reboot    operator  -> CloudAccepted
//	POST /cloud/{account}/instances/{id}/reverse-dns ReverseDNSRequest operator -> CloudAccepted
//	GET  /cloud/{account}/instances/{id}/transfer  operator  -> Transfer
//	POST /cloud/{account}/swap-ipv4 SwapIPv4Request operator  -> CloudAccepted
//	GET  /cloud/{account}/account                  operator  -> CloudAccountInfo
//	POST /provisionings          ProvisionRequest  admin     -> Provisioning   (201; the engine does the rest)
//	GET  /provisionings                            viewer    -> ProvisioningList
//	GET  /provisionings/{id}                       viewer    -> Provisioning   (with events)
//	POST /nodes/{id}/adopt       AdoptRequest      admin     -> Provisioning   (state joined)
//	POST /nodes/{id}/decommission DecommissionRequest admin  -> Decommissioned (records, instance, node gone)
//	GET  /audit ?actor&operation&target&outcome&since&until&limit&cursor admin -> AuditEventList
//	POST /nodes/install-command InstallCommandRequest admin -> InstallCommand (201; the token, shown once)
//	GET  /plane/status                             viewer    -> PlaneStatus
//	POST /plane/replicas/{id}/forget               admin     -> Replica
//	GET  /metrics                                  viewer    -> Prometheus text format
//
// GET /metrics answers this replica's series in the Prometheus text format (text/plain; version=0.0.4),
// not JSON; the series are listed in the plane's operations docs (plane/internal/metrics). lexicon-plane
// serve --metrics-listen serves the same page without a token, for a scraper on a private address.
//
// Success is 200 unless marked. The table is Routes; a client builds a path with Route.Path and a
// query with the route's Query type, and the plane registers exactly these routes (a test holds it to
// that). A wrong method on a route answers route.method_not_allowed (405) with the methods it takes in
// the Allow header and details.allow; a path under /api/v1/ that no route serves answers
// route.not_found (404); both in the envelope.
//
// The API's OpenAPI 3.1 document (Spec, plane/api/openapi.json) is generated from Routes and these
// types by `make openapi`: each route's summary, parameters, body, answer, role (x-role) and the codes
// it answers under each status (x-codes, from Route.Codes). The plane serves it without a token at
// SpecPath (GET /api/v1/openapi.json; `lexicon api spec`), and its tests validate every admin request
// and answer they make against it. Adding a route is adding it here with its types and running make
// openapi; the plane's tests fail until the plane serves it and the document names it.
//
// Codes a client meets beyond the common ones above: join.not_found, join.fingerprint_mismatch and
// join.not_pending (approve, reject); node.not_found; job.not_found, job.word_unavailable (the node does
// not report the word, or no release pins its digest), word.param_invalid (details name the field),
// job.not_queued (cancel), job.finished (mark-failed); incident.not_found; statement.* and module.*
// (publish: the plane verifies the release as a node would); driver.* (a plane without drivers answers
// driver.unavailable), account.*, dns.* and cloud.* from the driver routes (cloud.unsupported from
// swap-ipv4, reverse-dns and transfer names in details.drivers the enabled drivers that have the
// feature; cloud.confirm_mismatch refuses a delete whose confirm is not the instance's label, and
// nothing is deleted); every cloud call is in GET /drivers/audit from before the driver is asked, with
// code "pending" until its outcome is written; replica.not_found and
// replica.alive (forget a replica that still heartbeats); rollout.* from the rollout
// routes (rollout.selector_unknown_key, rollout.empty_selection, rollout.stages_incomplete,
// rollout.word_not_in_release and word.param_invalid refuse a start, and no rollout is made).
//
// Publishing offers a release: it reaches a node only when a rollout moves that node's target (the
// first release published reaches every node at once; ?deploy_all=true starts a rollout of the new
// release over every node, or, when there is no active node, makes it the fleet's target at once).
//
// Tokens: POST /tokens makes a token of any role, admin included, and needs an admin token itself, so
// no token can make one above its own role; its secret is in that answer only. The first admin token
// is made on the plane's machine (lexicon-plane token create), where no token is needed.
package api
