package errcode

// Codes of enrolled nodes. Nothing changed when any of them is returned.
const (
	// NodeNotFound: no node has that id, name or key.
	NodeNotFound = "node.not_found"
	// NodeNotActive: the node was disconnected by the plane or left on its own (details.state). Its key
	// is retired; the machine must join again with a fresh key.
	NodeNotActive = "node.not_active"
	// NodeNameTaken: an active node already has that name. Approve under another name, or disconnect
	// the other node first.
	NodeNameTaken = "node.name_taken"
	// NodeLabelInvalid: a label's key or value is outside the label grammar, or a node would carry too
	// many labels (details.label names the key).
	NodeLabelInvalid = "node.label_invalid"
	// NodeFilterInvalid: a node filter (--where, a search, a sort) is outside its grammar
	// (details.field names the parameter).
	NodeFilterInvalid = "node.filter_invalid"
)

var areaNode = Area{Name: "node", Reserved: true, Codes: []Spec{
	{NodeNotFound, statusNotFound, Unchanged},
	{NodeNotActive, statusForbidden, Unchanged},
	{NodeNameTaken, statusConflict, Unchanged},
	{NodeLabelInvalid, statusUnprocessable, Unchanged},
	{NodeFilterInvalid, statusBadRequest, Unchanged},
}}
