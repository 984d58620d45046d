// Package health is how a plane replica watches itself: it samples its memory against the machine's or
// cgroup's limit, counts what its routes answer, and heartbeats both into the store, where the
// incident detectors (plane:memory, plane:route_failing, plane:replica_missing) read them; its room
// answers what the replicas are, forgets a dead one, and says whether this one is alive and ready.
//
//	routes := health.NewRouteCounts(nil)
//	srv := wire.New(wire.Config{..., RouteCounts: routes})
//	hb := health.NewHeartbeat(health.Config{Store: st, ID: "plane-1", Routes: routes, MemoryAlert: 0.8})
//	bg := services.Group{..., hb}
package health
