// Command lexicon is the admin CLI: it approves joins, lists nodes, runs words as jobs, publishes
// releases, triages incidents, and enables drivers, manages their accounts and calls them, through the
// plane's admin API.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon", "administer a Lexicon fleet through its plane", commands())
}

func commands() []*cli.Command {
	return append(groups(),
		whoamiCmd(),
		joinsListCmd(), joinsApproveCmd(), joinsRejectCmd(),
		nodesListCmd(), nodesShowCmd(), nodesDisconnectCmd(),
		jobsRunCmd(), jobsShowCmd(), jobsListCmd(), jobsWatchCmd(), jobsCancelCmd(), jobsMarkFailedCmd(),
		releasesPublishCmd(), releasesListCmd(),
		driversListCmd(), driversEnableCmd(), driversDisableCmd(), driversStatusCmd(), driversAuditCmd(),
		accountsAddCmd(), accountsListCmd(), accountsRemoveCmd(),
		dnsZonesCmd(), dnsRecordsCmd(), dnsReconcileCmd(),
		cloudRegionsCmd(), cloudTypesCmd(), cloudInstancesCmd(),
		incidentsListCmd(), incidentsShowCmd(), incidentsTriageCmd(), incidentsNoteCmd(),
	)
}

// groups gives each group of commands the summary its help shows.
func groups() []*cli.Command {
	return []*cli.Command{
		{Path: "joins", Summary: "review the join requests of machines: compare fingerprints, approve, reject"},
		{Path: "nodes", Summary: "list, show and disconnect the nodes of the fleet"},
		{Path: "jobs", Summary: "run words on nodes as jobs, follow them, cancel them"},
		{Path: "releases", Summary: "publish releases to the plane and list them"},
		{Path: "drivers", Summary: "enable and disable the drivers a release pins, and read their audit log"},
		{Path: "accounts", Summary: "add, list and remove the accounts drivers act for"},
		{Path: "dns", Summary: "read a DNS account's zones and records, and add the records a zone lacks"},
		{Path: "cloud", Summary: "read a cloud account's regions, instance types and instances"},
		{Path: "incidents", Summary: "list incidents, read their timelines, triage them and add notes"},
	}
}
