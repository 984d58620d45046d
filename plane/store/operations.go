package store

import "slices"

// The operations the audit log of driver calls records (DriverCall.Operation), one table: every
// operation is spelled here and nowhere else, so the log names each one way and a reader finds them all
// in one place. They share the dotted shape of error codes (area.action) and some of their areas, but
// they are not codes: codes live in sdk/errcode, and an operation's outcome is one of them (or CodeOK).
const (
	// A driver's lifecycle: an admin enabled or disabled it, the plane restarted its process after a
	// crash (a driver health signal), its config schema was read, an account's settings were given to
	// its process.
	OpDriverEnable       = "driver.enable"
	OpDriverDisable      = "driver.disable"
	OpDriverRestart      = "driver.restart"
	OpDriverConfigSchema = "driver.config_schema"
	OpDriverSetConfig    = "driver.set_config"

	// Accounts: added (with its sealed credential), removed, marked test or not (the safety catch).
	OpAccountAdd        = "account.add"
	OpAccountRemove     = "account.remove"
	OpAccountMarkTest   = "account.mark_test"
	OpAccountUnmarkTest = "account.unmark_test"

	// The calls of the DNS contract.
	OpDNSListZones     = "dns.list_zones"
	OpDNSGetRecords    = "dns.get_records"
	OpDNSAppendRecords = "dns.append_records"
	OpDNSDeleteRecords = "dns.delete_records"

	// The calls of the cloud contract.
	OpCloudRegions       = "cloud.regions"
	OpCloudInstanceTypes = "cloud.instance_types"
	OpCloudListInstances = "cloud.list_instances"
	OpCloudCreate        = "cloud.create_instance"
	OpCloudGet           = "cloud.get_instance"
	OpCloudDelete        = "cloud.delete_instance"
	OpCloudPowerOn       = "cloud.power_on"
	OpCloudPowerOff      = "cloud.power_off"
	OpCloudReboot        = "cloud.reboot"
	OpCloudSwapIPv4      = "cloud.swap_ipv4"
	OpCloudReverseDNS    = "cloud.set_reverse_dns"
	OpCloudTransfer      = "cloud.monthly_transfer"
	OpCloudAccount       = "cloud.account"
)

var operations = []string{
	OpDriverEnable, OpDriverDisable, OpDriverRestart, OpDriverConfigSchema, OpDriverSetConfig,
	OpAccountAdd, OpAccountRemove, OpAccountMarkTest, OpAccountUnmarkTest,
	OpDNSListZones, OpDNSGetRecords, OpDNSAppendRecords, OpDNSDeleteRecords,
	OpCloudRegions, OpCloudInstanceTypes, OpCloudListInstances, OpCloudCreate, OpCloudGet, OpCloudDelete,
	OpCloudPowerOn, OpCloudPowerOff, OpCloudReboot, OpCloudSwapIPv4, OpCloudReverseDNS, OpCloudTransfer, OpCloudAccount,
}

// Operations lists every audited operation, in the order of the table.
func Operations() []string { return slices.Clone(operations) }

// KnownOperation reports whether op is an operation of the table.
func KnownOperation(op string) bool { return slices.Contains(operations, op) }
