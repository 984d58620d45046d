package errcode

// Codes of recipes: their checks, as a recipe's module reports them, and the agent's repair attempts,
// as its ledger and cases record them.
const (
	// RecipeNoVerdict: a check answered something that is not a verdict (pass, fail or unknown, and
	// repair params only with fail). The agent reports the check as unknown; nothing changed.
	RecipeNoVerdict = "recipe.no_verdict"
	// RecipeParamsNotDerived: a node_derived recipe's check gave no repair params (one JSON object) of
	// its own, and the agent takes them from nowhere else. The attempt counted and ran nothing.
	RecipeParamsNotDerived = "recipe.params_not_derived"
	// RecipeInterrupted: the agent stopped while this repair attempt ran (its start is in the ledger and
	// its end is not). The attempt counts as failed; whatever the repair did is unknown.
	RecipeInterrupted = "recipe.interrupted"
)

var areaRecipe = Area{Name: "recipe", Reserved: false, Codes: []Spec{
	{RecipeNoVerdict, statusBadRequest, Unchanged},
	{RecipeParamsNotDerived, statusBadRequest, PartlyChanged},
	{RecipeInterrupted, statusBadRequest, MaybeChanged},
}}
