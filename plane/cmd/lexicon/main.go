// Command lexicon is the admin CLI: it approves joins, lists nodes, runs words as jobs, publishes
// releases, triages incidents, and enables drivers, manages their accounts and calls them, through the
// plane's admin API.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon", "administer a Lexicon fleet through its plane", commands())
}

func commands() []*cli.Command {
	return []*cli.Command{
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
	}
}
