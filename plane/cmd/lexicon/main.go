// Command lexicon is the admin CLI: it approves joins, lists nodes, runs words as jobs, publishes
// releases, triages incidents, and enables drivers, manages their accounts and calls them, through the
// plane's admin API (plane/api, whose types and route table it shares with the plane). It links
// nothing of the plane's server or store.
//
// Exit statuses, the same for every command:
//
//	0  the command did what it was asked
//	1  it failed: the error's code says why (the plane refused, could not be reached, ...)
//	2  usage: wrong arguments or flags; nothing was sent
//	3  dns reconcile ran and conflicts remain
//	4  jobs run --wait, jobs watch: the job failed
//	5  jobs run --wait, jobs watch: the node refused the job (policy, capability, params)
//	6  jobs run --wait, jobs watch: the job was lost (handed out and never reported)
//	7  jobs run --wait, jobs watch: the job was cancelled
//	8  rollouts start --wait, rollouts show --wait: the rollout halted or was aborted
//
// So `lexicon jobs run --wait NODE WORD && next` runs next only after the job completed. A command that
// ends with 3 to 7 prints its whole result first; with -o json, a job that did not complete has "ok":
// false.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon", "administer a Lexicon fleet through its plane", commands())
}

func commands() []*cli.Command {
	return append(append(groups(),
		whoamiCmd(),
		tokensListCmd(), tokensCreateCmd(), tokensRevokeCmd(),
		joinsListCmd(), joinsApproveCmd(), joinsRejectCmd(),
		nodesListCmd(), fleetCmd(), nodesShowCmd(), nodesWordCmd(), nodesDisconnectCmd(), nodesLabelCmd(),
		jobsRunCmd(), jobsShowCmd(), jobsListCmd(), jobsWatchCmd(), jobsCancelCmd(), jobsMarkFailedCmd(),
		releasesPublishCmd(), releasesListCmd(), releasesShowCmd(), releasesDiffCmd(),
		driversListCmd(), driversEnableCmd(), driversDisableCmd(), driversStatusCmd(), driversAuditCmd(), driversSchemaCmd(),
		accountsAddCmd(), accountsListCmd(), accountsRemoveCmd(), accountsMarkTestCmd(), accountsUnmarkTestCmd(),
		dnsZonesCmd(), dnsRecordsCmd(), dnsReconcileCmd(),
		cloudRegionsCmd(), cloudTypesCmd(), cloudInstancesCmd(),
		cloudCreateCmd(), cloudShowCmd(), cloudDeleteCmd(), cloudPowerOnCmd(), cloudPowerOffCmd(), cloudRebootCmd(),
		cloudSwapIPv4Cmd(), cloudReverseDNSCmd(), cloudTransferCmd(), cloudAccountCmd(),
		nodesProvisionCmd(), nodesAdoptCmd(), nodesDecommissionCmd(), provisioningsListCmd(), provisioningsShowCmd(),
		incidentsListCmd(), incidentsShowCmd(), incidentsTriageCmd(), incidentsNoteCmd(),
		planeStatusCmd(), planeForgetReplicaCmd(),
		apiSpecCmd(),
	), rolloutsCmds()...)
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
		{Path: "releases", Summary: "publish releases to the plane and list them"},
		{Path: "drivers", Summary: "enable and disable the drivers a release pins, and read their audit log"},
		{Path: "accounts", Summary: "add, list, remove and mark test the accounts drivers act for"},
		{Path: "dns", Summary: "read a DNS account's zones and records, and add the records a zone lacks"},
		{Path: "cloud", Summary: "create, read, power, reboot and delete a cloud account's instances"},
		{Path: "incidents", Summary: "list incidents, read their timelines, triage them and add notes"},
		{Path: "plane", Summary: "see the plane's own replicas and their health; forget a replica that stopped"},
		{Path: "rollouts", Summary: "take a release or a word to the fleet in stages, halting on the first miss"},
	}
}
