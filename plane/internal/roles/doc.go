// Package roles keeps roles, named and versioned declarations of what machines of one kind carry
// (packages, files, units, users and groups, the firewall, sysctl values), their assignments to nodes
// by selector, and renders each node's footprint (sdk/footprint) from the roles it carries. Plan and
// apply queue the converge word on those nodes, apply as a staged rollout.
//
//	p, err := roles.Parse(file)              // role.invalid with details.field "/files/0/mode"
//	fp, err := roles.Render([]roles.Spec{p.Role}) // role.conflict when two roles disagree on an item
package roles
