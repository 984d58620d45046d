package errcode

// Codes of footprints: what a node should carry (files, units, users and groups, firewall, sysctl,
// packages), as the converge word checks, converges and reports it, and as the footprint capabilities
// answer. The area is open, like capability: the converge word reports these as its own failure.
const (
	// FootprintInvalid: a footprint does not decode or breaks a rule of its format (details.field is a
	// JSON pointer to the member at fault, "/files/3/sha256"). Nothing was changed.
	FootprintInvalid = "footprint.invalid"
	// FootprintRefused: items of the footprint lie outside what the node's own policy lets converge
	// touch, or outside the converge word's signed bounds (details.item names the first, details.reason
	// says why; the word's output lists every one). The whole footprint was refused before anything
	// was touched: nothing was changed.
	FootprintRefused = "footprint.refused"
	// FootprintTooLarge: a file of the footprint is larger than the node accepts (details.item,
	// details.limit_bytes): the smaller of the converge word's signed max_bytes and the node policy's
	// max_file_bytes. It is refused with the rest of the footprint: nothing was changed.
	FootprintTooLarge = "footprint.too_large"
	// FootprintDigestMismatch: the plane served bytes for an artifact that do not hash to the sha256
	// asked for (details.sha256). Nothing was staged and nothing was written.
	FootprintDigestMismatch = "footprint.digest_mismatch"
	// FootprintNoRecord: the node holds no converged footprint (a repair or a drift check found none):
	// no converge has been applied here yet. Nothing was changed.
	FootprintNoRecord = "footprint.no_record"
	// FootprintItemsFailed: a converge ran and some items failed (details.failed counts them; the word's
	// output gives each item's status and code). Items reported changed were changed, failed items
	// are as their code says, and a unit owed a restart stays owed until a converge restarts it.
	FootprintItemsFailed = "footprint.items_failed"
)

var areaFootprint = Area{Name: "footprint", Reserved: false, Codes: []Spec{
	{FootprintInvalid, statusBadRequest, Unchanged},
	{FootprintRefused, statusBadRequest, Unchanged},
	{FootprintTooLarge, statusTooLarge, Unchanged},
	{FootprintDigestMismatch, statusBadGateway, Unchanged},
	{FootprintNoRecord, statusNotFound, Unchanged},
	{FootprintItemsFailed, statusBadRequest, PartlyChanged},
}}
