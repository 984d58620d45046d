package errcode

// Codes of schedules: a word run on a selection of nodes on an interval or a cron expression. Returned
// as errors, nothing changed: a refused schedule was never stored, and a refused edit left it as it was.
const (
	// ScheduleNotFound: no schedule has that id or name.
	ScheduleNotFound = "schedule.not_found"
	// ScheduleNameTaken: another schedule has that name (details.name).
	ScheduleNameTaken = "schedule.name_taken"
	// ScheduleNameInvalid: a schedule's name is not 1 to 63 characters of a-z 0-9 - _ starting with a
	// letter or digit.
	ScheduleNameInvalid = "schedule.name_invalid"
	// ScheduleCronInvalid: the cron expression does not parse (five fields, minute hour day-of-month
	// month day-of-week, or a descriptor such as @hourly); details.field names it.
	ScheduleCronInvalid = "schedule.cron_invalid"
	// ScheduleIntervalInvalid: neither or both of an interval and a cron expression were given, or the
	// interval is below a minute or over a year.
	ScheduleIntervalInvalid = "schedule.interval_invalid"
	// ScheduleSelectorInvalid: the selector is not all, name[,name...] or key=value[,key=value...]
	// (details.field).
	ScheduleSelectorInvalid = "schedule.selector_invalid"
	// ScheduleWordUnknown: no stored release pins a word of that name (details.word).
	ScheduleWordUnknown = "schedule.word_unknown"
)

var areaSchedule = Area{Name: "schedule", Reserved: true, Codes: []Spec{
	{ScheduleNotFound, statusNotFound, Unchanged},
	{ScheduleNameTaken, statusConflict, Unchanged},
	{ScheduleNameInvalid, statusBadRequest, Unchanged},
	{ScheduleCronInvalid, statusBadRequest, Unchanged},
	{ScheduleIntervalInvalid, statusBadRequest, Unchanged},
	{ScheduleSelectorInvalid, statusBadRequest, Unchanged},
	{ScheduleWordUnknown, statusUnprocessable, Unchanged},
}}
