// Command lexicon is the admin CLI: it approves joins, lists nodes, runs words as jobs, publishes
// releases, triages incidents, and enables drivers, manages their accounts and calls them, through the
// plane's admin API (plane/api, whose types and route table it shares with the plane). It links
// nothing of the plane's server or store.
//
// Exit statuses, as `lexicon --help` lists them (each command's help lists its own):
//
//	0  the command did what it was asked
//	1  it failed: the error's code says why
//	2  usage: an unknown command or flag, or wrong arguments; nothing was done
//	3  conflicts remain; the report names each (dns reconcile)
//	4  the job failed: its word ran and failed (a capability denied included), or an operator failed it (jobs run, jobs watch, backups restore)
//	5  the node did not run the job's word: its policy, or its own check of the word or params, refused it (jobs run, jobs watch, backups restore)
//	6  the job was lost: handed out and never reported (jobs run, jobs watch, backups restore)
//	7  the job was cancelled before it ran (jobs run, jobs watch, backups restore)
//	8  the rollout halted, was aborted or was reverted (rollouts start, rollouts show, fleet patch, roles apply)
//	9  the provisioning failed: the machine did not join (nodes provision, provisionings show)
//	10 the batch did not complete on every node: a job failed, was refused, lost or cancelled, a node lacked the word, or the batch stopped (jobs run, jobs batch show)
//
// Statuses 4 to 10 come only with --wait (jobs watch always waits). So `lexicon jobs run --wait NODE
// WORD && next` runs next only after the job completed. Params the plane refuses fail jobs run with 1
// (word.param_invalid) before anything is queued. A command that ends with 3 to 10 prints its whole
// result first; with -o json, "ok" is false. Ctrl-C while following work ends the command with 1
// (usage.interrupted); the work goes on.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon", "administer a Lexicon fleet through its plane", commands())
}

func commands() []*cli.Command {
	return append(append(groups(),
		whoamiCmd(), loginCmd(), logoutCmd(),
		tokensListCmd(), tokensCreateCmd(), tokensRevokeCmd(),
		joinsListCmd(), joinsApproveCmd(), joinsRejectCmd(),
		nodesListCmd(), fleetCmd(), nodesShowCmd(), nodesWordCmd(), nodesDisconnectCmd(), nodesLabelCmd(),
		jobsRunCmd(), jobsShowCmd(), jobsListCmd(), jobsWatchCmd(), jobsCancelCmd(), jobsMarkFailedCmd(),
		jobsBatchShowCmd(), jobsBatchListCmd(),
		releasesPublishCmd(), releasesListCmd(), releasesShowCmd(), releasesDiffCmd(),
		driversListCmd(), driversEnableCmd(), driversDisableCmd(), driversStatusCmd(), driversAuditCmd(), driversSchemaCmd(),
		accountsAddCmd(), accountsListCmd(), accountsRemoveCmd(), accountsMarkTestCmd(), accountsUnmarkTestCmd(),
		dnsZonesCmd(), dnsRecordsCmd(), dnsReconcileCmd(),
		cloudRegionsCmd(), cloudTypesCmd(), cloudInstancesCmd(),
		cloudCreateCmd(), cloudShowCmd(), cloudDeleteCmd(), cloudPowerOnCmd(), cloudPowerOffCmd(), cloudRebootCmd(),
		cloudSwapIPv4Cmd(), cloudReverseDNSCmd(), cloudTransferCmd(), cloudAccountCmd(),
		nodesProvisionCmd(), nodesInstallCommandCmd(), nodesAdoptCmd(), nodesDecommissionCmd(), provisioningsListCmd(), provisioningsShowCmd(),
		incidentsListCmd(), incidentsShowCmd(), incidentsTriageCmd(), incidentsNoteCmd(),
		planeStatusCmd(), planeForgetReplicaCmd(),
		machinesListCmd(), machinesAddCmd(), machinesEditCmd(), machinesConfirmCmd(), machinesRemoveCmd(),
		auditListCmd(),
		apiSpecCmd(),
	), append(append(append(append(rolloutsCmds(), schedulesCmds()...), fleetSecurityCmd()), append(fleetCriticalCmds(), rolesCmds()...)...), backupsCmds()...)...)
}

// groups gives each group of commands the summary its help shows.
func groups() []*cli.Command {
	return []*cli.Command{
		{Path: "api", Summary: "the admin API itself: print its OpenAPI document"},
		{Path: "tokens", Summary: "list, make and revoke admin tokens (the admin role)"},
		{Path: "joins", Summary: "review the join requests of machines: compare fingerprints, approve, reject"},
		{Path: "nodes", Summary: "list, show, label, provision, adopt, decommission and disconnect the nodes of the fleet"},
		{Path: "provisionings", Summary: "follow the machines the plane makes through cloud accounts"},
		{Path: "jobs", Summary: "run words on nodes as jobs, follow them, cancel them"},
		{Path: "jobs batch", Summary: "read batches: one word run across the nodes a selector matched"},
		{Path: "releases", Summary: "publish releases to the plane and list them"},
		{Path: "drivers", Summary: "enable and disable the drivers a release pins, and read their audit log"},
		{Path: "accounts", Summary: "add, list, remove and mark test the accounts drivers act for"},
		{Path: "dns", Summary: "read a DNS account's zones and records, and add the records a zone lacks"},
		{Path: "cloud", Summary: "create, read, power, reboot and delete a cloud account's instances"},
		{Path: "incidents", Summary: "list incidents, read their timelines, triage them and add notes"},
		{Path: "audit", Summary: "read the audit trail: who changed what, from where, and how it ended"},
		{Path: "plane", Summary: "see the plane's own replicas and their health; forget a replica that stopped"},
		{Path: "rollouts", Summary: "take a release or a word to the fleet in stages, halting on the first miss"},
		{Path: "machines", Summary: "the machine inventory: every machine we pay for, red first; write machines down, confirm, remove"},
		{Path: "fleet critical", Summary: "the critical package list the fleet security view judges by: show it, set it at run time (admin), reset it to the plane's own"},
		{Path: "fleet", Summary: "the fleet's package security at a glance, and patching it: security fixes installed in stages, each node verified"},
		{Path: "schedules", Summary: "run words on a selection of nodes on an interval or a cron expression"},
		{Path: "backups", Summary: "the fleet's and each node's backup health, the targets nodes back up to, and the policies"},
		{Path: "backups targets", Summary: "add (probed, the secret sealed), list, show, check and remove backup targets"},
		{Path: "backups policy", Summary: "show and set the fleet's backup policy and a node's own, or clear a node's"},
	}
}
