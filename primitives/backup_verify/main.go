// Command backup_verify proves this node's newest backup restorable: the host reads back the chain of
// runs the job's grant names, decrypts it with the node's own key, checks every object against its
// manifest and every file against its index, and restores every database dump into a scratch database
// that it drops afterwards. Any mismatch fails with backup.verify_failed, naming what.
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

func main() {
	word.Run(func(struct{}) (word.BackupVerified, error) {
		v, err := word.Backup().Verify()
		if err != nil {
			return word.BackupVerified{}, err
		}
		word.Log("run %s verified: %d files (%d bytes), %d objects, databases %v", v.Run, v.Files, v.Bytes, v.Objects, v.Databases)
		return v, nil
	})
}
