package channel

// WordReach is what one word of a node's vocabulary may touch on its machine: each capability the
// word's signed manifest declares, with the bounds left once the node's own policy narrowed them. The
// agent computes it from the same policy file the word host reads, so an operator sees before a run
// what the node would refuse. The plane cannot compute it: the policy never leaves the machine.
type WordReach struct {
	Word   string `json:"word"`
	Digest string `json:"digest"` // the module the reach is of, as the vocabulary reports it
	// Refused is why the node runs the word not at all (its class refused, or a policy that cannot be
	// trusted); the capabilities are then still listed as the manifest declares them.
	Refused string     `json:"refused,omitempty"`
	Caps    []CapReach `json:"caps"`
}

// CapReach is one capability's effective bounds. A list holds what both the manifest and the policy
// allow: a pattern both allow is given once; two patterns neither of which holds the other are given
// joined by " & " (both must match). Denied says why the policy leaves the capability nothing (no
// converge, backup or renewal section, a package operation it does not list, a host list with no
// names); Note says what else bounds it (the agent's own folders, which converge never writes).
type CapReach struct {
	Cap      string   `json:"cap"`
	Roots    []string `json:"roots,omitempty"`
	Units    []string `json:"units,omitempty"`
	Hosts    []string `json:"hosts,omitempty"`
	Names    []string `json:"names,omitempty"`
	Packages []string `json:"packages,omitempty"`
	Origins  []string `json:"origins,omitempty"`
	Programs []string `json:"programs,omitempty"`
	// Narrowed is true when the node's policy bounds this capability at all, so a reader can tell "the
	// manifest's bounds, untouched" from "what the policy left".
	Narrowed bool   `json:"narrowed,omitempty"`
	Denied   string `json:"denied,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Reach caps: a claim reports at most MaxReachWords words, MaxReachCaps capabilities a word,
// MaxReachList entries a list and MaxReachText bytes a text. The plane cuts what is over (its node
// text rules) rather than refusing the claim, as it does host facts.
const (
	MaxReachWords = 256
	MaxReachCaps  = 64
	MaxReachList  = 64
	MaxReachText  = 512
)

// Lists answers the capability's bound lists with their names, in the order they are shown.
func (c *CapReach) Lists() []ReachList {
	return []ReachList{{"roots", &c.Roots}, {"units", &c.Units}, {"hosts", &c.Hosts}, {"names", &c.Names},
		{"packages", &c.Packages}, {"origins", &c.Origins}, {"programs", &c.Programs}}
}

// ReachList is one named bound list of a CapReach.
type ReachList struct {
	Name string
	List *[]string
}
