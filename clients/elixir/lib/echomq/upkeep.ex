defmodule EchoMQ.Upkeep do
  @moduledoc """
  The upkeep a worker owes every queue it works (PROTOCOL.md §11.3), run on
  a period (a quarter of a second by default) by a process of its own with
  its own connection, so a slow call never holds up a job's ack:

  - REAP (expired leases back to pending, or to dead, with the worker's
    max attempts for jobs with none of their own), PROMOTE (due delayed
    jobs), TRIM of the done, dead and cancelled sets and SETTLE (batches),
    in one round trip, each again at once while a call was full, for at
    most a period;
  - for flows (1.6, §7.8, `EchoMQ.Upkeep.Flows`): the relay of the
    queue's notices to their parents while `<q>notices` holds any, and the
    sweep of parents whose children never came, when the head of
    `<q>waiting` has waited past a grace (a minute);
  - the queue's due `every` schedules (§11.6, `EchoMQ.Schedule`): a FIRE
    for each tick to fire (a `cron` one is left alone, said once);
  - the queue registry, `emq:queues`, at start and once a minute.

  Any number of workers may run it at once: each call is one atomic
  transition. While Redis does not answer, a period does nothing but ask
  (`PING`): the outage is said once, and its end.
  """
  use GenServer
  require Logger

  alias EchoMQ.{Args, Keyspace, Redis}

  @limit 100
  @registry_every 60_000

  @doc false
  def start_link(opts), do: GenServer.start_link(__MODULE__, opts)

  @impl true
  def init(opts) do
    {:ok, conn} = Redis.open(Keyword.fetch!(opts, :redis))
    queue = Keyword.fetch!(opts, :queue)

    state = %{
      conn: conn,
      via: Keyword.fetch!(opts, :via),
      queue: queue,
      max_attempts: Args.integer("max_attempts", Keyword.fetch!(opts, :max_attempts), "MAX_ATTEMPTS"),
      period: Keyword.get(opts, :period, 250),
      noted_at: nil,
      warned: MapSet.new(),
      down: false
    }

    send(self(), :tick)
    {:ok, state}
  end

  @impl true
  def handle_info(:tick, state) do
    started = System.monotonic_time(:millisecond)
    state = once(state)
    Process.send_after(self(), :tick, max(0, state.period - (System.monotonic_time(:millisecond) - started)))
    {:noreply, state}
  end

  @doc "One period's upkeep, as the module doc says; the new state."
  def once(state) do
    case Redis.query(state.conn, ["PING"]) do
      {:ok, _} -> state |> back() |> work()
      other -> down(state, other)
    end
  end

  # Redis does not answer: said once, the period's work left to the next.
  defp down(%{down: true} = state, _), do: state

  defp down(state, why) do
    Logger.warning(
      "the upkeep of #{state.queue} cannot reach Redis (#{inspect(why)}); " <>
        "it asks again each period, and says when Redis answers"
    )

    %{state | down: true}
  end

  defp back(%{down: true} = state) do
    Logger.info("the upkeep of #{state.queue} reaches Redis again")
    %{state | down: false}
  end

  defp back(state), do: state

  defp work(state) do
    state = note_queue(state)
    deadline = System.monotonic_time(:millisecond) + state.period
    run_sweeps(state, Map.keys(sweeps(state)), deadline)
    EchoMQ.Upkeep.Flows.relay(state, state.queue, "-", deadline)
    EchoMQ.Upkeep.Flows.sweep_when_due(state)
    fire_schedules(state)
  end

  # The queue's due `every` schedules (§11.6): SCHEDULES DUE 1, then for each
  # its FIREs one at a time, stopping at the first -1 (another worker is ahead).
  defp fire_schedules(state) do
    keys = Keyspace.keys(:schedules, state.queue)

    case state.via.eval(state.conn, :schedules, keys, ["DUE", "1", "LIMIT", "100"]) do
      {:ok, [now | due]} ->
        Enum.reduce(due, state, fn [name, definition, next], acc ->
          case EchoMQ.Schedule.read(definition) do
            nil ->
              if MapSet.member?(acc.warned, name),
                do: acc,
                else:
                  Logger.warning(
                    "schedule #{inspect(name)} of #{acc.queue}: this host reads only `every` definitions; left alone"
                  ) && %{acc | warned: MapSet.put(acc.warned, name)}

            every ->
              acc.queue
              |> EchoMQ.Schedule.fires(name, every, next, now)
              |> Enum.reduce_while(:ok, &send_fire(acc, &1, &2))

              acc
          end
        end)

      other ->
        Logger.warning("SCHEDULES on #{state.queue} failed: #{inspect(other)}")
        state
    end
  end

  defp send_fire(state, {:fire, keys, args}, :ok) do
    case state.via.eval(state.conn, :fire, keys, args) do
      {:ok, -1} -> {:halt, :ok}
      {:ok, _} -> {:cont, :ok}
      other -> Logger.warning("FIRE on #{state.queue} failed: #{inspect(other)}") && {:halt, :ok}
    end
  end

  defp sweeps(%{queue: q, max_attempts: max}) do
    limit = ["LIMIT", Integer.to_string(@limit)]

    %{
      reap: {:reap, Keyspace.keys(:reap, q), [max | limit]},
      promote: {:promote, Keyspace.keys(:promote, q), limit},
      trim_done: {:trim, Keyspace.keys(:trim, q, state: :done), limit},
      trim_dead: {:trim, Keyspace.keys(:trim, q, state: :dead), limit},
      trim_cancelled: {:trim, Keyspace.keys(:trim, q, state: :cancelled), limit},
      settle: {:settle, Keyspace.keys(:settle, q), limit}
    }
  end

  defp run_sweeps(_state, [], _deadline), do: :ok

  defp run_sweeps(state, names, deadline) do
    all = sweeps(state)
    answers = state.via.eval_many(state.conn, Enum.map(names, &all[&1]))

    full =
      for {name, answer} <- Enum.zip(names, answers),
          moved = moved(name, answer, state),
          moved >= @limit,
          do: name

    if System.monotonic_time(:millisecond) < deadline, do: run_sweeps(state, full, deadline), else: :ok
  end

  defp moved(:reap, {:ok, [requeued, dead]}, _), do: requeued + dead
  defp moved(:settle, {:ok, [_closed, looked]}, _), do: looked
  defp moved(_, {:ok, n}, _) when is_integer(n), do: n

  defp moved(name, other, state) do
    Logger.warning("#{name} on #{state.queue} failed: #{inspect(other)}")
    0
  end

  # The queue registry (§11.3): at start, then about once a minute.
  defp note_queue(state) do
    now = System.monotonic_time(:millisecond)

    if state.noted_at == nil or now - state.noted_at >= @registry_every do
      clock = Integer.to_string(System.system_time(:millisecond))

      case Redis.query(state.conn, ["ZADD", Keyspace.registry(), "GT", clock, state.queue]) do
        {:ok, _} -> :ok
        other -> Logger.info("the queue registry was not written (#{inspect(other)}); going on without it")
      end

      %{state | noted_at: now}
    else
      state
    end
  end
end
