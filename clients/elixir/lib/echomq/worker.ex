defmodule EchoMQ.Worker do
  @moduledoc """
  Runs a handler on a queue's jobs, under a supervisor:

      children = [
        {EchoMQ.Worker,
         queue: "emails", redis: [host: "127.0.0.1", port: 6379], concurrency: 10,
         handler: fn %EchoMQ.Job{payload: payload} -> {:ok, "sent " <> payload} end}
      ]

      Supervisor.start_link(children, strategy: :one_for_one)

  The handler (a function of one argument, or a module with `perform/1`)
  gets an `EchoMQ.Job` and answers:
  - `:ok` or `{:ok, nil}`: the job is done (ACK); `{:ok, bytes}`: done,
    and `bytes` kept as its result (ACK's RESULT, at most 1 MiB);
  - `{:error, reason}`, a raise, a throw or an exit: the job failed
    (FAIL), with the reason (a binary as it is, anything else inspected)
    or the exception and its stack trace as its error; it is retried
    after a back-off, or dies, by its own policy (§7.2) or the worker's
    `max_attempts` and `backoff`;
  - `{:defer, ms}` (or `{:defer, ms, :pause_queue}`): a downstream said
    "not now"; the job waits `ms` without spending its attempt (DEFER).

  What it owes the protocol (§6, §7, §9, §11.3): claims wait for an
  arrival while the queue is idle (`EchoMQ.Worker.Claims`) and obey the
  gate's word; every running job's lease is renewed in one pipelined
  round of EXTENDs a third of a lease; an `EMQFENCE` (or `EMQNOJOB`) on a
  renewal, an ack or a timeout kills the handler and throws its result
  away; the job's own TIMEOUT (or the worker's `timeout`) kills the
  handler and FAILs the job; a graceful stop (the supervisor's shutdown)
  stops claiming, lets running jobs finish within `grace`, and RELEASEs
  the rest with REFUND, so no attempt is spent; `EchoMQ.Upkeep` runs
  beside it; and it keeps its entry in the worker registry
  (`emq:workers`) every `beat`, deleted when it stops.

  Options (times in ms): `queue`, `handler` (required), `redis`
  (`EchoMQ.Redis.open/1`'s), `via` (`:auto`, detected; or a connector),
  `concurrency` (10), `lease` (30_000), `max_attempts` (5), `backoff`
  (1_000, doubling each attempt), `max_backoff` (3_600_000), `timeout`
  (none), `idle_wait` (1_000, at most 3_000), `upkeep` (250), `grace`
  (10_000), `beat` (5_000), `name`.
  """
  use GenServer
  require Logger

  alias EchoMQ.{Args, Connector, InvalidInput, Job, Keyspace, Redis}
  alias EchoMQ.Worker.{Claims, Finish, Registration}

  # The options in ms beside the protocol's own limits, and their ranges.
  @ms_ranges [
    backoff: 0..999_999_999_999,
    max_backoff: 0..999_999_999_999,
    grace: 0..86_400_000,
    idle_wait: 1..3_000,
    upkeep: 1..60_000,
    beat: 10..60_000
  ]

  @doc false
  def child_spec(opts) do
    shutdown = Keyword.get(opts, :grace, 10_000) + Keyword.get(opts, :idle_wait, 1_000) + 10_000
    %{id: {__MODULE__, opts[:queue]}, start: {__MODULE__, :start_link, [opts]}, shutdown: shutdown}
  end

  @doc "Start a worker linked to the caller (a supervisor, usually)."
  @spec start_link(keyword) :: GenServer.on_start()
  def start_link(opts) do
    Keyspace.valid_queue!(Keyword.get(opts, :queue))
    handler = Keyword.get(opts, :handler)

    unless is_function(handler, 1) or (is_atom(handler) and function_exported?(ensure(handler), :perform, 1)),
      do: raise(InvalidInput, "a handler is a function of one argument or a module with perform/1")

    Args.integer("lease (ms)", Keyword.get(opts, :lease, 30_000), "LEASE_MS")
    Args.integer("max_attempts", Keyword.get(opts, :max_attempts, 5), "MAX_ATTEMPTS")
    Args.integer("concurrency", Keyword.get(opts, :concurrency, 10), "CLAIM_COUNT")

    if opts[:timeout] != nil, do: Args.integer("timeout (ms)", opts[:timeout], "TIMEOUT_MS")

    for {name, range} <- @ms_ranges,
        value = Keyword.get(opts, name),
        value != nil and not (is_integer(value) and value in range),
        do: raise(InvalidInput, "#{name} is a number of ms in #{inspect(range)}, not #{inspect(value)}")

    GenServer.start_link(__MODULE__, opts, Keyword.take(opts, [:name]))
  end

  defp ensure(module), do: (Code.ensure_loaded(module) && module) || module

  @doc "How many jobs it finished (acked) and failed so far: `%{processed: n, failed: n}`."
  @spec counts(GenServer.server()) :: %{processed: non_neg_integer, failed: non_neg_integer}
  def counts(worker), do: GenServer.call(worker, :counts)

  @impl true
  def init(opts) do
    Process.flag(:trap_exit, true)
    redis = Keyword.get(opts, :redis, [])
    {:ok, conn} = Redis.open(redis)
    queue = Keyword.fetch!(opts, :queue)
    via = via(conn, Keyword.get(opts, :via, :auto))

    case Connector.check_queue(conn, queue) do
      :ok -> start(opts, redis, conn, queue, via)
      {:error, reason} -> {:stop, reason}
    end
  end

  defp start(opts, redis, conn, queue, via) do
    # The options were checked in start_link/1, in the caller.
    lease = Keyword.get(opts, :lease, 30_000)
    max_attempts = Keyword.get(opts, :max_attempts, 5)
    idle_wait = Keyword.get(opts, :idle_wait, 1_000)
    {:ok, tasks} = Task.Supervisor.start_link()
    {:ok, claims} = Claims.start_link(self(), redis, via, queue, lease, idle_wait)

    {:ok, upkeep} =
      EchoMQ.Upkeep.start_link(
        redis: redis,
        via: via,
        queue: queue,
        max_attempts: max_attempts,
        period: Keyword.get(opts, :upkeep, 250)
      )

    state = %{
      conn: conn,
      via: via,
      queue: queue,
      handler: Keyword.fetch!(opts, :handler),
      lease: lease,
      max_attempts: max_attempts,
      backoff: Keyword.get(opts, :backoff, 1_000),
      max_backoff: Keyword.get(opts, :max_backoff, 3_600_000),
      timeout: Keyword.get(opts, :timeout),
      idle_wait: idle_wait,
      grace: Keyword.get(opts, :grace, 10_000),
      tasks: tasks,
      claims: claims,
      upkeep: upkeep,
      claiming: false,
      # When claims began to fail (monotonic ms), while they do: an outage is said once.
      claims_failing: nil,
      free: Keyword.get(opts, :concurrency, 10),
      concurrency: Keyword.get(opts, :concurrency, 10),
      running: %{},
      acks: [],
      acking: false,
      registration: Registration.new(queue, Keyword.get(opts, :concurrency, 10), Keyword.get(opts, :beat, 5_000)),
      processed: 0,
      failed: 0
    }

    send(self(), :beat)
    Process.send_after(self(), :heart, max(div(state.lease, 3), 1))
    {:ok, ask(state)}
  end

  defp via(conn, :auto) do
    case Connector.detect(conn) do
      {:ok, via} -> via
      {:error, reason} -> raise "EchoMQ.Worker cannot speak to this server: #{inspect(reason)}"
    end
  end

  defp via(conn, EchoMQ.Connector = via) do
    :ok = Connector.load(conn)
    via
  end

  defp via(_conn, via), do: via

  # -- claiming ----------------------------------------------------------

  defp ask(%{claiming: false, free: free} = state) when free > 0 do
    send(state.claims, {:claim, min(free, 1000)})
    %{state | claiming: true}
  end

  defp ask(state), do: state

  @impl true
  def handle_info({:claimed, answer}, state) do
    state = %{state | claiming: false}

    case answer do
      {:ok, reply} ->
        {jobs, word} = Enum.split_with(reply, &is_list/1)
        state = state |> claims_work() |> then(&Enum.reduce(jobs, &1, fn job, acc -> dispatch(job, acc) end))

        case {jobs, word} do
          {[_ | _], []} -> {:noreply, ask(state)}
          {_, [wait]} when wait > 0 -> later(state, min(wait, state.idle_wait))
          {_, [0]} -> later(state, 50)
          {[_ | _], _} -> later(state, 50)
          # [] or [-1]: the claim (or BZPOPMIN) already waited for an arrival.
          {[], _} -> {:noreply, ask(state)}
        end

      other ->
        later(claims_fail(state, other), 200)
    end
  end

  def handle_info(:claim, state), do: {:noreply, ask(state)}
  def handle_info(:ack, state), do: {:noreply, state |> Finish.ack() |> ask()}

  # A handler's answer.
  def handle_info({ref, outcome}, %{running: running} = state) when is_map_key(running, ref) do
    Process.demonitor(ref, [:flush])
    {:noreply, state |> Finish.finish(ref, outcome) |> ask()}
  end

  # A handler that died outside its own catch (killed, linked exit).
  def handle_info({:DOWN, ref, :process, _pid, reason}, %{running: running} = state) when is_map_key(running, ref) do
    {:noreply, state |> Finish.finish(ref, {:fail, "the handler exited: " <> inspect(reason)}) |> ask()}
  end

  def handle_info({:timeout, ref}, %{running: running} = state) when is_map_key(running, ref) do
    entry = running[ref]
    Task.Supervisor.terminate_child(state.tasks, entry.task.pid)
    Process.demonitor(ref, [:flush])
    {:noreply, state |> Finish.finish(ref, {:fail, "timed out after #{entry.timeout} ms"}) |> ask()}
  end

  def handle_info(:heart, state) do
    Process.send_after(self(), :heart, max(div(state.lease, 3), 1))
    {:noreply, state |> renew() |> ask()}
  end

  def handle_info(:beat, state) do
    Process.send_after(self(), :beat, state.registration.beat)
    Registration.beat(state.conn, state.registration, running(state))
    {:noreply, state}
  end

  def handle_info({:EXIT, pid, reason}, state) when pid in [state.conn, state.claims, state.upkeep, state.tasks] do
    {:stop, {:lost, pid, reason}, state}
  end

  def handle_info(_other, state), do: {:noreply, state}

  # A claim's failure is said when claims begin to fail, at debug while
  # they go on (every 200 ms), and their end once.
  defp claims_fail(%{claims_failing: nil} = state, other) do
    Logger.warning(
      "claim on #{state.queue} failed: #{inspect(other)}; trying again (said once, and when it works again)"
    )

    %{state | claims_failing: System.monotonic_time(:millisecond)}
  end

  defp claims_fail(state, other) do
    Logger.debug("claim on #{state.queue} still fails: #{inspect(other)}")
    state
  end

  defp claims_work(%{claims_failing: nil} = state), do: state

  defp claims_work(%{claims_failing: since} = state) do
    seconds = (System.monotonic_time(:millisecond) - since) / 1000
    Logger.info("claim on #{state.queue} works again, after #{:erlang.float_to_binary(seconds, decimals: 1)} s")
    %{state | claims_failing: nil}
  end

  defp later(state, ms) do
    Process.send_after(self(), :claim, ms)
    {:noreply, state}
  end

  @impl true
  def handle_call(:counts, _from, state), do: {:reply, Map.take(state, [:processed, :failed]), state}

  # -- one job -----------------------------------------------------------

  defp dispatch(raw, state) do
    job = Job.read(raw, state.queue, state.conn, state.via)
    handler = state.handler
    task = Task.Supervisor.async_nolink(state.tasks, fn -> Finish.run(handler, job) end)
    timeout = (job.policy && job.policy.timeout) || state.timeout
    if timeout, do: Process.send_after(self(), {:timeout, task.ref}, timeout)
    entry = %{job: job, task: task, timeout: timeout, renewed: System.monotonic_time(:millisecond)}
    %{state | running: Map.put(state.running, task.ref, entry), free: state.free - 1}
  end

  # -- leases ------------------------------------------------------------

  defp renew(%{running: running} = state) when map_size(running) == 0, do: state

  defp renew(state) do
    entries = Map.to_list(state.running)
    lease = Integer.to_string(state.lease)
    sent = System.monotonic_time(:millisecond)

    calls =
      for {_ref, %{job: job}} <- entries,
          do: {:extend, Keyspace.keys(:extend, state.queue, job: job.id), [job.id, Integer.to_string(job.token), lease]}

    Enum.zip(entries, state.via.eval_many(state.conn, calls))
    |> Enum.reduce(state, fn
      {{ref, entry}, {:ok, _}}, acc ->
        put_in(acc.running[ref], %{entry | renewed: sent})

      {{ref, entry}, {:error, {:server, "EMQ" <> _ = text}}}, acc ->
        Task.Supervisor.terminate_child(acc.tasks, entry.task.pid)
        Process.demonitor(ref, [:flush])
        Finish.lost(%{acc | running: Map.delete(acc.running, ref), free: acc.free + 1}, entry.job, text)

      {_, other}, acc ->
        Logger.warning("renewing a lease on #{acc.queue} failed: #{inspect(other)}")
        acc
    end)
  end

  defp running(state) do
    now = System.system_time(:millisecond)
    clock = System.monotonic_time(:millisecond)

    for {_, %{job: job, renewed: renewed}} <- state.running do
      %{queue: state.queue, id: job.id, token: job.token, lease_until: now + max(0, renewed + state.lease - clock)}
    end
  end

  # -- a graceful stop ---------------------------------------------------

  @impl true
  def terminate(reason, state) do
    state = stop_claiming(state)
    state = state |> await_running(System.monotonic_time(:millisecond) + state.grace) |> Finish.ack()

    for {ref, entry} <- state.running do
      Task.Supervisor.terminate_child(state.tasks, entry.task.pid)
      Process.demonitor(ref, [:flush])
      Finish.release(state, entry.job)
    end

    Registration.leave(state.conn, state.registration)
    if Process.alive?(state.upkeep), do: GenServer.stop(state.upkeep, :normal, 5_000)
    reason
  catch
    kind, error ->
      Logger.error("stopping the worker of #{state.queue}: #{Exception.format(kind, error, __STACKTRACE__)}")
  end

  # A claim in flight may have taken jobs by now: a CLAIM the server ran,
  # its reply on its way or already in the mailbox, or an EMQ.CLAIM … BLOCK
  # that takes them while it waits. Let it answer, on either executor, and
  # release what it brings (§11.3, "while stopping"). It answers within the
  # idle wait: Lua's BZPOPMIN after an idle claim takes no job.
  defp stop_claiming(%{claiming: true} = state) do
    if Process.alive?(state.claims) do
      receive do
        {:claimed, {:ok, reply}} ->
          for raw <- reply, is_list(raw), do: Finish.release(state, Job.read(raw, state.queue, state.conn, state.via))

        {:claimed, other} ->
          Logger.warning("the last claim on #{state.queue} failed: #{inspect(other)}")
      after
        state.idle_wait + 5_000 ->
          Logger.warning("the last claim on #{state.queue} did not answer; REAP takes back what it took")
      end
    end

    Process.exit(state.claims, :kill)
    %{state | claiming: false, free: 0}
  end

  defp stop_claiming(state) do
    Process.exit(state.claims, :kill)
    %{state | free: 0}
  end

  defp await_running(%{running: running} = state, _deadline) when map_size(running) == 0, do: state

  defp await_running(state, deadline) do
    wait = max(0, deadline - System.monotonic_time(:millisecond))

    receive do
      {ref, outcome} when is_map_key(state.running, ref) ->
        Process.demonitor(ref, [:flush])
        await_running(Finish.finish(state, ref, outcome), deadline)

      {:DOWN, ref, :process, _, reason} when is_map_key(state.running, ref) ->
        await_running(Finish.finish(state, ref, {:fail, "the handler exited: " <> inspect(reason)}), deadline)

      # The leases are still renewed, and the finished jobs acked, during
      # the grace: a grace longer than a lease would let REAP take them.
      :heart ->
        Process.send_after(self(), :heart, max(div(state.lease, 3), 1))
        await_running(renew(state), deadline)

      :ack ->
        await_running(Finish.ack(state), deadline)
    after
      wait -> state
    end
  end
end
