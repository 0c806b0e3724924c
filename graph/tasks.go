package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// checkOnly refuses a WithTasks run that could not stop short of ending
// its step.
func (l *loop[S]) checkOnly(cmd *Command[S]) error {
	switch {
	case l.saver == nil:
		return fmt.Errorf("%w: WithTasks saves the tasks' writes in the thread's checkpoint", ErrNoCheckpointer)
	case l.nested != nil:
		return errors.New("graph: WithTasks is for a root graph's run, not a subgraph's")
	case cmd == nil:
		return errors.New("graph: WithTasks runs tasks of a thread's next step: use Resume, not Invoke")
	case l.g.writesAny(&cmd.Update) || len(cmd.Goto) > 0 || len(cmd.Sends) > 0:
		return errors.New("graph: a WithTasks run takes a Command without Update, Goto or Sends (they would change the step its tasks belong to)")
	case l.cfg.checkpointID != "":
		return errors.New("graph: WithTasks runs tasks of the thread's latest checkpoint; WithCheckpointID would fork it")
	case len(l.cfg.only) == 0:
		return errors.New("graph: WithTasks names no task")
	}
	return nil
}

// runOnly runs the tasks of the step that WithTasks named and saves their
// outcomes as pending writes, leaving the step open.
func (l *loop[S]) runOnly(ctx context.Context, tasks []*task[S]) error {
	var todo []*task[S]
	for _, id := range l.cfg.only {
		i := slices.IndexFunc(tasks, func(t *task[S]) bool { return t.hdr.ID() == id })
		if i < 0 {
			return fmt.Errorf("%w: task %q is not one of the %d tasks of step %d of thread %q", ErrUnknownTask, id, len(tasks), l.step, l.cfg.thread)
		}
		if t := tasks[i]; !t.done && !slices.Contains(todo, t) {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.runTasks(ctx, todo); err != nil {
		return err // a failed task's error is saved (see fail)
	}
	intr := interruptsOf(todo)
	if len(todo) == 1 && todo[0].done {
		// runConcurrent saves the writes of each of several tasks as they
		// finish; a step's lone task saves them with the checkpoint.
		if err := l.putWrites(ctx, todo[0].hdr.ID(), todo[0]); err != nil {
			return err
		}
	}
	if intr != nil {
		return l.pause(ctx, todo, intr)
	}
	return nil
}
