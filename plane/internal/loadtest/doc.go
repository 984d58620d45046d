// Package loadtest measures the plane under a simulated fleet: agents that sign every request like
// real ones (brief claims once the plane holds their report, each result carrying the next claim),
// against a real plane process on PostgreSQL and on SQLite. `make bench` runs it and prints the
// figures: plane RSS, idle CPU and dispatch latency with 10,000 agents held on long poll; sustained job
// round trips per second with 500 agents; statements per round trip (the plane's own counter);
// CPU split between the plane, the PostgreSQL backends serving it and the load generator; and
// `pgbench -N` run against the same server in the same run, with the ratio of the two.
package loadtest
