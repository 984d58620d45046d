package errcode

// Codes of the machine inventory: the machines written down by hand beside the managed nodes and the
// cloud servers. Returned as errors, nothing changed: a refused add, edit, confirm or remove left the
// inventory as it was.
const (
	// MachineNotFound: no machine written down has that id (details.id).
	MachineNotFound = "machine.not_found"
	// MachineNameTaken: another machine written down has that name (details.name).
	MachineNameTaken = "machine.name_taken"
	// MachineFieldInvalid: a field is missing or not what it must be (details.field): a name of 1 to 63
	// of a-z, 0-9, - . _ starting with a letter or digit; purpose and owner 1 to 200 characters of text.
	MachineFieldInvalid = "machine.field_invalid"
	// MachineOSReleaseInvalid: the OS release is not "ID VERSION" as os-release(5) spells them
	// ("debian 12", "ubuntu 22.04", "rhel 9.4"), or names a release the plane's support table does not
	// know (details.reason says which), so its support could not be judged.
	MachineOSReleaseInvalid = "machine.os_release_invalid"
	// MachineRetireByInvalid: retire-by is not a date YYYY-MM-DD between 2000-01-01 and 2100-12-31
	// (details.field).
	MachineRetireByInvalid = "machine.retire_by_invalid"
)

var areaMachine = Area{Name: "machine", Reserved: true, Codes: []Spec{
	{MachineNotFound, statusNotFound, Unchanged},
	{MachineNameTaken, statusConflict, Unchanged},
	{MachineFieldInvalid, statusBadRequest, Unchanged},
	{MachineOSReleaseInvalid, statusBadRequest, Unchanged},
	{MachineRetireByInvalid, statusBadRequest, Unchanged},
}}
