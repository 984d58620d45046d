package errcode

// Codes of the plane's store, common to every table. The area codes (join., node., job., token.,
// release.) say which rule refused an operation; these say the store itself could not do it.
const (
	// StoreUnavailable: the database could not be reached, or failed the operation. A read changed
	// nothing; a write that failed before commit changed nothing, and one that failed while committing
	// may or may not have landed (the cause says which step failed).
	StoreUnavailable = "store.unavailable"
	// StoreBusy: the database stayed locked by another writer past the busy timeout (SQLite). Nothing
	// changed; the operation may be retried.
	StoreBusy = "store.busy"
	// StoreURLInvalid: the store URL names no known database or cannot be parsed. Nothing was opened.
	StoreURLInvalid = "store.url_invalid"
	// StoreMigrationFailed: a schema migration failed. Its transaction rolled back, so the schema is as
	// it was before the migration began (details.version names it).
	StoreMigrationFailed = "store.migration_failed"
	// StoreSchemaNewer: the database records a migration this binary does not know, so a newer plane
	// has upgraded it. Nothing changed; run the newer plane.
	StoreSchemaNewer = "store.schema_newer"
	// StoreParamInvalid: a parameter breaks the store's contract (details.field names it): an empty id,
	// malformed JSON, a digest that is not lowercase hex sha256, an unknown state. Nothing changed.
	StoreParamInvalid = "store.param_invalid"
	// StoreClosed: the store was used after Close. Nothing changed.
	StoreClosed = "store.closed"
)

var areaStore = Area{Name: "store", Reserved: true, Codes: []Spec{
	{StoreUnavailable, statusUnavailable, MaybeChanged},
	{StoreBusy, statusUnavailable, Unchanged},
	{StoreURLInvalid, statusBadRequest, Unchanged},
	{StoreMigrationFailed, statusBadRequest, Unchanged},
	{StoreSchemaNewer, statusBadRequest, Unchanged},
	{StoreParamInvalid, statusUnprocessable, Unchanged},
	{StoreClosed, statusUnavailable, Unchanged},
}}
