#!/usr/bin/env python3
"""A Flostra task worker in Python, standard library only (Python 3.8+).

It polls one task queue of a workspace, runs each task with `handle`, heartbeats while the task
runs, and completes it. Replace `handle` with your own work. Configuration is environment
variables:

    FLOSTRA_API_URL       Flostra's API                     (default http://127.0.0.1:3000)
    FLOSTRA_TOKEN         a token with the task-worker role  (required)
    FLOSTRA_WORKSPACE     the workspace                      (default dev)
    FLOSTRA_QUEUE         the task queue                     (default python)
    FLOSTRA_CONCURRENCY   tasks run at once, one thread each (default 4)
    FLOSTRA_WORKER_ID     this worker's id                   (default <host>-<pid>)
    FLOSTRA_SHUTDOWN_MS   how long SIGTERM lets running tasks finish (default 30000)

On SIGTERM (or Ctrl-C) it stops polling, lets running tasks finish within FLOSTRA_SHUTDOWN_MS,
gives the rest back (completed as failed, retryable, code `worker_shutdown`) and exits.
"""

import json
import os
import random
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

API_URL = os.environ.get("FLOSTRA_API_URL", "http://127.0.0.1:3000").rstrip("/")
TOKEN = os.environ.get("FLOSTRA_TOKEN", "")
WORKSPACE = os.environ.get("FLOSTRA_WORKSPACE", "dev")
QUEUE = os.environ.get("FLOSTRA_QUEUE", "python")
CONCURRENCY = int(os.environ.get("FLOSTRA_CONCURRENCY", "4"))
WORKER_ID = os.environ.get("FLOSTRA_WORKER_ID", "%s-%d" % (socket.gethostname(), os.getpid()))
SHUTDOWN_SECONDS = int(os.environ.get("FLOSTRA_SHUTDOWN_MS", "30000")) / 1000.0
POLL_WAIT_MS = 20000
REQUEST_TIMEOUT_SECONDS = 10


class TaskFailed(Exception):
    """Raise it from `handle` to fail the task with your own code; retryable=False is never retried."""

    def __init__(self, code, message, retryable=True):
        super().__init__(message)
        self.code = code
        self.retryable = retryable


def handle(task_input, ctx):
    """The work of one task: returns its output (any JSON) or raises.

    This example counts the words of `text`. `ctx.cancelled` is set when the execution was
    cancelled or this worker lost the task; `ctx.heartbeat(progress)` reports progress.
    """
    text = (task_input or {}).get("text")
    if not isinstance(text, str):
        raise TaskFailed("bad_input", "input.text must be a string", retryable=False)
    ctx.heartbeat({"stage": "counting"})
    if ctx.cancelled.is_set():
        raise TaskFailed("task_cancelled", "cancelled", retryable=False)
    words = text.split()
    return {"words": len(words), "longest": max(words, key=len) if words else None, "by": "python"}


# --- protocol ------------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status, code, message, retry_after=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after = retry_after

    @property
    def transient(self):
        """No answer, a timeout, too many requests or a server error: worth trying again."""
        return self.status == 0 or self.status in (408, 429) or self.status >= 500


def post(path, body, timeout):
    """POSTs JSON; returns (status, parsed body or None); raises ApiError otherwise."""
    request = urllib.request.Request(
        API_URL + path,
        data=json.dumps(body).encode("utf-8"),
        method="POST",
        headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8")
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode("utf-8", "replace")
        try:
            problem = json.loads(text)
        except ValueError:
            problem = {}
        code = problem.get("code") or "http_%d" % error.code
        retry_after = error.headers.get("Retry-After")
        retry_after = float(retry_after) if retry_after and retry_after.isdigit() else None
        raise ApiError(error.code, code, "%s answered %d %s: %s" % (path, error.code, code, problem.get("detail", "")), retry_after)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ApiError(0, "network_error", "%s: %s" % (path, error))


def backoff(failures, retry_after=None, first=0.25, longest=15.0):
    ceiling = min(longest, first * 2 ** (failures - 1))
    return max(random.uniform(ceiling / 2, ceiling), min(retry_after or 0, longest))


def log(level, message, **fields):
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "level": level, "msg": message, "workerId": WORKER_ID}
    record.update(fields)
    print(json.dumps(record), flush=True)


class Task:
    """One running task: its heartbeats, in a thread of their own, and its completion."""

    def __init__(self, polled):
        self.id = polled["taskId"]
        self.polled = polled
        self.fencing_token = polled["fencingToken"]
        self.interval = polled["heartbeatIntervalMs"] / 1000.0
        self.cancelled = threading.Event()  # cancel requested, or the lease lost: stop working
        self.lease_lost = False
        self.cancel_requested = False
        self.finished = threading.Event()
        self.lock = threading.Lock()  # one completion per task: the worker's or the shutdown's
        self.completed = False
        self.heartbeats = threading.Thread(target=self._beat, daemon=True)

    def heartbeat(self, progress=None):
        body = {"workerId": WORKER_ID, "fencingToken": self.fencing_token}
        if progress is not None:
            body["progress"] = progress
        try:
            _, answer = post("/v1/tasks/%s/heartbeat" % urllib.parse.quote(self.id), body, REQUEST_TIMEOUT_SECONDS)
        except ApiError as error:
            if error.status == 409:  # stale_attempt or lease_expired: the task is not ours any more
                self.lease_lost = True
                self.cancelled.set()
                log("warn", "lease lost: abandoning the task", taskId=self.id, code=error.code)
            raise
        if answer and answer.get("cancelRequested") and not self.cancel_requested:
            log("info", "task cancelled", taskId=self.id)
            self.cancel_requested = True
            self.cancelled.set()
        return answer

    def _beat(self):
        failures = 0
        delay = self.interval
        while not self.finished.wait(delay):
            try:
                self.heartbeat()
                failures, delay = 0, self.interval
            except ApiError as error:
                if self.lease_lost:
                    return
                failures += 1
                delay = min(self.interval, backoff(failures, error.retry_after))
                log("warn", "heartbeat failed; trying again", taskId=self.id, error=str(error))

    def complete(self, outcome, output=None, error=None, give_up_at=None, take_next=False):
        """Reports the outcome once, retrying while the API cannot answer (idempotent by fencing token).

        With take_next, the same request takes the queue's next due task for this worker: the
        polled task is returned (None when none was due).
        """
        with self.lock:
            if self.completed or self.lease_lost or self.cancel_requested:
                return None
            self.completed = True
        body = {"workerId": WORKER_ID, "fencingToken": self.fencing_token, "outcome": outcome}
        if take_next:
            body["next"] = True
        if outcome == "succeeded" and output is not None:
            body["output"] = output
        if error is not None:
            body["error"] = error
        failures = 0
        while True:
            try:
                _, answer = post("/v1/tasks/%s/complete" % urllib.parse.quote(self.id), body, REQUEST_TIMEOUT_SECONDS)
                log("info", "task completed", taskId=self.id, outcome=outcome)
                return (answer or {}).get("next")
            except ApiError as err:
                if err.status == 409:
                    log("warn", "completion refused: someone else owns the task now", taskId=self.id, code=err.code)
                    return None
                if not err.transient or self.lease_lost or (give_up_at is not None and time.time() > give_up_at):
                    log("error", "completion not reported", taskId=self.id, error=str(err))
                    return None
                failures += 1
                log("warn", "completion failed; trying again", taskId=self.id, error=str(err))
                time.sleep(backoff(failures, err.retry_after))


class Worker:
    def __init__(self):
        self.stopping = threading.Event()
        self.running = set()
        self.running_lock = threading.Lock()

    def slot(self):
        failures = 0
        polled = None
        # A task the last completion took is this worker's: it is run even when stopping (and given back at once).
        while polled is not None or not self.stopping.is_set():
            if polled is not None:
                polled = self.run(Task(polled))
                continue
            try:
                status, polled = post(
                    "/v1/workspaces/%s/task-queues/%s/poll" % (urllib.parse.quote(WORKSPACE), urllib.parse.quote(QUEUE)),
                    {"workerId": WORKER_ID, "waitMs": POLL_WAIT_MS},
                    POLL_WAIT_MS / 1000.0 + REQUEST_TIMEOUT_SECONDS,
                )
                failures = 0
            except ApiError as error:
                failures += 1
                delay = backoff(failures, error.retry_after)
                log("warn" if error.transient else "error", "poll failed; trying again", error=str(error), delay=round(delay, 2))
                self.stopping.wait(delay)
                continue
            if status == 204 or not polled:
                polled = None
                continue
            polled = self.run(Task(polled))

    def run(self, task):
        """Runs the task and completes it; returns the next task its completion took, or None."""
        with self.running_lock:
            self.running.add(task)
        try:
            if self.stopping.is_set():  # arrived during shutdown: give it back at once
                task.complete("failed", error={"code": "worker_shutdown", "message": "the worker is stopping", "retryable": True})
                return None
            task.heartbeats.start()
            try:
                output = handle(task.polled.get("input"), task)
                outcome, error = "succeeded", None
            except TaskFailed as failure:
                output, outcome = None, "failed"
                error = {"code": failure.code, "message": str(failure)[:4096], "retryable": failure.retryable}
            except Exception as failure:  # any other exception: retryable task_error
                output, outcome = None, "failed"
                error = {"code": "task_error", "message": ("%s: %s" % (type(failure).__name__, failure))[:4096], "retryable": True}
            if task.lease_lost:
                log("warn", "the task's lease was lost while it ran: its result is not reported", taskId=task.id)
            elif task.cancel_requested:  # cancelled with its execution: a completion would be refused
                log("info", "task cancelled: its result is not reported", taskId=task.id)
            else:
                # The slot is free again: take its next task with the same request (none while stopping).
                return task.complete(outcome, output=output, error=error, take_next=not self.stopping.is_set())
            return None
        finally:
            task.finished.set()
            with self.running_lock:
                self.running.discard(task)

    def serve(self):
        if not TOKEN:
            sys.exit("FLOSTRA_TOKEN is required: a token with the task-worker role in %s" % WORKSPACE)
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        for _ in range(CONCURRENCY):
            threading.Thread(target=self.slot, daemon=True).start()
        log("info", "python task worker started", workspace=WORKSPACE, queue=QUEUE, concurrency=CONCURRENCY)
        while not self.stopping.wait(0.5):
            pass
        log("info", "stopping: no more polls; waiting for running tasks", running=len(self.running))
        deadline = time.time() + SHUTDOWN_SECONDS
        while time.time() < deadline and self.running:
            time.sleep(0.05)
        with self.running_lock:
            left = list(self.running)
        for task in left:  # outlived the bound: give it back so another worker can take it
            task.cancelled.set()
            log("warn", "giving a task back: it did not finish in time", taskId=task.id)
            task.complete(
                "failed",
                error={"code": "worker_shutdown", "message": "the worker stopped", "retryable": True},
                give_up_at=time.time() + 5,
            )
        log("info", "python task worker stopped")


if __name__ == "__main__":
    Worker().serve()
