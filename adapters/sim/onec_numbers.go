package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// onecNumbers are the simulated 1C's last document numbers, as its file
// keeps them.
type onecNumbers struct {
	Invoices int `json:"invoices"`
	Orders   int `json:"sales_orders"`
	Generic  int `json:"documents"`
}

// KeepOneCNumbers makes the simulated 1C go on from the document numbers
// kept in the file at path, and keep them there after every document it
// numbers: a demo restarted numbers its next invoice ОГ00-000002, not a
// second ОГ00-000001, as a real base would. Only the numbers are kept;
// the documents themselves are the run's. A missing file starts at 1. A
// failed write is not the caller's to handle (the simulator answers the
// call it numbered; only a later run could repeat the number): it is
// reported by the next KeepOneCNumbers of the file.
func (s *Server) KeepOneCNumbers(path string) error {
	o := s.onec
	o.mu.Lock()
	defer o.mu.Unlock()
	var n onecNumbers
	switch data, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("the simulated 1C's numbers: %w", err)
	default:
		if err := json.Unmarshal(data, &n); err != nil || n.Invoices < 0 || n.Orders < 0 || n.Generic < 0 {
			return fmt.Errorf("the simulated 1C's numbers: %s is not a file of them (remove it to number from 1 again)", path)
		}
	}
	o.invoices, o.orders, o.generic = max(o.invoices, n.Invoices), max(o.orders, n.Orders), max(o.generic, n.Generic)
	o.numbersAt = path
	return o.saveNumbers()
}

// saveNumbers writes the last numbers to the file KeepOneCNumbers named,
// if any (o.mu held): a new file renamed over the old, so a crash leaves
// one or the other whole.
func (o *onec) saveNumbers() error {
	if o.numbersAt == "" {
		return nil
	}
	data, _ := json.Marshal(onecNumbers{Invoices: o.invoices, Orders: o.orders, Generic: o.generic})
	tmp, err := os.CreateTemp(filepath.Dir(o.numbersAt), ".sim-numbers-*")
	if err != nil {
		return fmt.Errorf("the simulated 1C's numbers: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("the simulated 1C's numbers: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.numbersAt); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("the simulated 1C's numbers: %w", err)
	}
	return nil
}
