package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// maxMachineText bounds a machine's purpose, owner and OS release.
const maxMachineText = 200

func checkMachine(p MachinePutParams) error {
	if p.ID != "" {
		if err := checkID("id", p.ID); err != nil {
			return err
		}
	}
	if p.Name == "" || len(p.Name) > 63 || !ValidText(p.Name) {
		return invalid("name", "a machine's name is 1 to 63 bytes of text")
	}
	for _, f := range []struct{ name, v string }{{"purpose", p.Purpose}, {"owner", p.Owner}, {"os_release", p.OSRelease}} {
		if len(f.v) > maxMachineText || !ValidText(f.v) {
			return invalid(f.name, "%s is at most %d bytes of text", f.name, maxMachineText)
		}
	}
	return checkActor(p.By)
}

func (s *sqlStore) MachinePut(ctx context.Context, p MachinePutParams) (Machine, error) {
	if err := checkMachine(p); err != nil {
		return Machine{}, err
	}
	t := now(p.Now)
	var m Machine
	err := s.write(ctx, "put machine", func(ex sqldb.Execer) error {
		var err error
		if p.ID == "" {
			m, err = scanMachine(ex.QueryRow(ctx, s.q.MachineInsert, s.ids.next("mach_", t), p.Name, p.Purpose, p.Owner, p.OSRelease, at(p.RetireBy), t, p.By))
		} else {
			m, err = scanMachine(ex.QueryRow(ctx, s.q.MachineUpdate, p.ID, p.Name, p.Purpose, p.Owner, p.OSRelease, at(p.RetireBy), t, p.By))
		}
		switch s.drv.Kind(err) {
		case sqldb.ErrUnique:
			return errcode.New(errcode.MachineNameTaken, "a machine named %s is already written down", p.Name).With(errcode.DetailName, p.Name)
		case sqldb.ErrNoRows:
			return machineNotFound(p.ID)
		}
		return err
	})
	return m, err
}

func machineNotFound(id string) error {
	return errcode.New(errcode.MachineNotFound, "no machine %s is written down", id).With(errcode.DetailID, id)
}

func (s *sqlStore) MachineGet(ctx context.Context, p MachineGetParams) (Machine, error) {
	if err := checkID("id", p.ID); err != nil {
		return Machine{}, err
	}
	var m Machine
	err := s.read(ctx, "get machine", func(ex sqldb.Execer) error {
		var err error
		m, err = scanMachine(ex.QueryRow(ctx, s.q.MachineGet, p.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return machineNotFound(p.ID)
		}
		return err
	})
	return m, err
}

func (s *sqlStore) MachineList(ctx context.Context) ([]Machine, error) {
	out := []Machine{}
	err := s.read(ctx, "list machines", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.MachineList)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			m, err := scanMachine(rs)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) MachineConfirm(ctx context.Context, p MachineConfirmParams) (Machine, error) {
	if err := checkID("id", p.ID); err != nil {
		return Machine{}, err
	}
	if err := checkActor(p.By); err != nil {
		return Machine{}, err
	}
	var m Machine
	err := s.write(ctx, "confirm machine", func(ex sqldb.Execer) error {
		var err error
		m, err = scanMachine(ex.QueryRow(ctx, s.q.MachineConfirm, p.ID, now(p.Now), p.By))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return machineNotFound(p.ID)
		}
		return err
	})
	return m, err
}

func (s *sqlStore) MachineRemove(ctx context.Context, p MachineRemoveParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	return s.write(ctx, "remove machine", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.MachineDelete, p.ID)
		if err != nil {
			return err
		}
		if n == 0 {
			return machineNotFound(p.ID)
		}
		return nil
	})
}

func scanMachine(r sqldb.Row) (Machine, error) {
	var m Machine
	err := r.Scan(&m.ID, &m.Name, &m.Purpose, &m.Owner, &m.OSRelease, stamp{&m.RetireBy}, stamp{&m.ConfirmedAt}, &m.ConfirmedBy,
		stamp{&m.CreatedAt}, &m.CreatedBy)
	return m, err
}

func (s *sqlStore) JobNewestOutputs(ctx context.Context, p JobNewestOutputsParams) ([]JobOutput, error) {
	if len(p.Words) == 0 || len(p.Words) > 2 {
		return nil, invalid("words", "ask for one or two words")
	}
	w1, w2 := p.Words[0], p.Words[len(p.Words)-1]
	out := []JobOutput{}
	err := s.read(ctx, "newest job outputs", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.JobNewestOutputs, w1, w2)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var o JobOutput
			var raw []byte
			if err := rs.Scan(&o.NodeID, &o.Word, stamp{&o.FinishedAt}, &raw); err != nil {
				return err
			}
			o.Output = rawOrNil(raw)
			out = append(out, o)
		}
		return rs.Err()
	})
	return out, err
}
