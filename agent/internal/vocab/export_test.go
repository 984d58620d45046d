package vocab

// SetAfterSwitch makes v call f between pointing current at a new statement and raising the trust
// state, where a test kills the process.
func SetAfterSwitch(v *Vocabulary, f func()) { v.afterSwitch = f }
