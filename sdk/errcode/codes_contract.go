package errcode

// Codes of word contracts, compared between a release and the one before it.
const (
	// ContractBroken: a word in the previous release lost or changed a param, or lost or redefined an
	// output field (details.word, details.field). The release was not written.
	ContractBroken = "contract.broken"
)

var areaContract = Area{Name: "contract", Reserved: true, Codes: []Spec{
	{ContractBroken, statusBadRequest, Unchanged},
}}
