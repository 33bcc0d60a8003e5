defmodule EchoMQ.Jobs do
  @moduledoc """
  The named handle for admission, and the reads and controls a producer
  needs beside it: `enqueue/5` exactly as the seed writes it, plus
  `enqueue_many/4`, `cancel/4`, `inspect/4`, `result/4`, `retry/4`,
  `stats/3` and `schedule_every/6`.

  A job is an entity: its row is a hash at the job key; the pending set is
  keyed by the id itself. The host builds the keys (`EchoMQ.Keyspace`) and
  hands them in declared; the values ride ARGV. The dispatch is carried,
  never inspected: `via:` names the connector, `EchoMQ.Connector` (Lua) by
  default, `EchoMQ.Connector.Native` for the module's `EMQ.*` commands
  (`EchoMQ.Connector.detect/1` picks one).

  Answers are `{:ok, _}` or `{:error, _}`: the server's refusals by their
  code (`{:error, :kind}` for `EMQKIND`, `:no_job`, `:state`), any other
  passed on as `{:error, {:server, text}}`. Bad input a host can see (a
  queue name, a payload over 1 MiB, an option out of range) raises
  `EchoMQ.InvalidInput` before anything is sent.
  """

  alias EchoMQ.{Args, Connector, InvalidInput, JobInfo, Keyspace, Policy, Protocol}

  @enqueue :enqueue
  @enqueue_options [:via, :keys, :priority, :delay, :at, :attempts, :backoff, :backoff_exp, :timeout] ++
                     [:unique, :unique_for, :unique_done, :headers]

  @doc """
  Admit one job, idempotently: `{:ok, :enqueued}`, `{:ok, :duplicate}` (a
  record with this id exists; nothing changed) or `{:error, :kind}` (the
  id is not `JOB`-namespaced: the server's `EMQKIND`). With `unique:`, a
  key another job holds answers `{:ok, {:held_by, id}}`.

  It sends ENQUEUE's thirteen keys, the seed's two first, so that the
  queue's event log sees the job and idle workers wake (§7, §9);
  `keys: :seed` sends exactly the seed's two (no option that needs
  another key). Options: `priority`, `delay` or `at` (ms), the job's own
  policy `attempts`, `backoff` or `backoff_exp`, `timeout` (ms, §7.2),
  `unique` with `unique_for` (ms) and `unique_done`, `headers` (a map of
  binaries, §7.6).
  """
  @spec enqueue(Connector.conn(), binary, binary, binary, keyword) ::
          {:ok, :enqueued | :duplicate | {:held_by, binary}} | {:error, term}
  def enqueue(conn, queue, job_id, payload, opts \\ [])
      when is_binary(job_id) and is_binary(payload) do
    # A queue name may not carry a brace or a NUL: one queue, one {q} hashtag.
    Keyspace.valid_queue!(queue)
    Args.only!(opts, @enqueue_options)
    Args.bytes("payload", payload)
    # The dispatch is carried, never inspected: EchoMQ.Connector by default.
    via = Keyword.get(opts, :via, Connector)
    keys = [Keyspace.job_key(queue, job_id), Keyspace.queue_key(queue, "pending")]
    options = enqueue_options(opts)
    keys = keys ++ more_keys(queue, job_id, options, Keyword.get(opts, :keys, :all))

    case via.eval(conn, @enqueue, keys, [job_id, payload | options]) do
      {:ok, 1} -> {:ok, :enqueued}
      {:ok, 0} -> {:ok, :duplicate}
      {:ok, holder} when is_binary(holder) -> {:ok, {:held_by, holder}}
      {:error, {:server, "EMQKIND" <> _}} -> {:error, :kind}
      other -> other
    end
  end

  defp more_keys(queue, job_id, _options, :all), do: Keyspace.keys(@enqueue, queue, job: job_id) |> Enum.drop(2)
  defp more_keys(_queue, _job_id, [], :seed), do: []

  defp more_keys(_queue, _job_id, options, :seed),
    do: raise(InvalidInput, "the seed's two keys take no option; #{inspect(options)} needs all of ENQUEUE's keys")

  defp more_keys(_queue, _job_id, _options, other),
    do: raise(InvalidInput, "keys: is :all or :seed, not #{Kernel.inspect(other)}")

  defp enqueue_options(opts) do
    if opts[:delay] != nil and opts[:at] != nil, do: raise(InvalidInput, "delay and at exclude each other")

    priority =
      case Keyword.get(opts, :priority, 0) do
        0 -> []
        n -> ["PRIORITY", Args.integer("priority", n, "PRIORITY")]
      end

    priority ++
      option("DELAY", opts[:delay], &Args.integer("delay (ms)", &1, "DELAY_MS")) ++
      option("AT", opts[:at], &Args.integer("at (server ms)", &1, "AT_MS")) ++
      Policy.options(opts) ++ unique(opts) ++ option("HEADERS", opts[:headers], &Args.headers/1)
  end

  defp unique(opts) do
    case {opts[:unique], opts[:unique_for], Keyword.get(opts, :unique_done, false)} do
      {nil, nil, false} ->
        []

      {nil, _, _} ->
        raise InvalidInput, "unique_for and unique_done need unique"

      {key, for_ms, done} ->
        most = Protocol.size("MAX_UNIQUE_KEY")

        unless is_binary(key) and byte_size(key) in 1..most,
          do: raise(InvalidInput, "a unique key is 1 to #{most} bytes, not #{Kernel.inspect(key)}")

        if for_ms == nil, do: raise(InvalidInput, "unique needs unique_for: how long the key holds (ms)")
        unless is_boolean(done), do: raise(InvalidInput, "unique_done is a boolean, not #{Kernel.inspect(done)}")

        ["UNIQUE", key, "UNIQUE_FOR", Args.integer("unique_for (ms)", for_ms, "UNIQUE_MS")] ++
          if done, do: ["UNIQUE_DONE", "1"], else: []
    end
  end

  defp option(_name, nil, _check), do: []
  defp option(name, value, check), do: [name, check.(value)]

  @doc """
  Admit many plain jobs (an id and a payload each, no options), each on
  its own, in calls of at most 1000 (ENQUEUEMANY): `{:ok, answers}`, one
  `:enqueued` or `:duplicate` a job, in order. A call refused (`{:error,
  :kind}`: an id not `JOB`-namespaced) enqueued nothing of its jobs;
  the calls before it stand.
  """
  @spec enqueue_many(Connector.conn(), binary, [{binary, binary}], keyword) ::
          {:ok, [:enqueued | :duplicate]} | {:error, term}
  def enqueue_many(conn, queue, jobs, opts \\ []) when is_list(jobs) do
    Keyspace.valid_queue!(queue)
    Args.only!(opts, [:via])
    via = Keyword.get(opts, :via, Connector)

    if jobs == [], do: raise(InvalidInput, "enqueue_many takes at least one job")

    args =
      Enum.map(jobs, fn
        {id, payload} -> [Args.id(id), Args.bytes("payload", payload)]
        other -> raise InvalidInput, "a job is {id, payload}, not #{Kernel.inspect(other)}"
      end)

    keys = Keyspace.keys(:enqueuemany, queue)
    {_, most} = Protocol.limit("ENQUEUES")

    args
    |> Enum.chunk_every(most)
    |> Enum.reduce_while({:ok, []}, fn chunk, {:ok, done} ->
      case via.eval(conn, :enqueuemany, keys, List.flatten(chunk)) do
        {:ok, replies} -> {:cont, {:ok, done ++ Enum.map(replies, &admission/1)}}
        {:error, {:server, "EMQKIND" <> _}} -> {:halt, {:error, :kind}}
        other -> {:halt, other}
      end
    end)
  end

  defp admission(1), do: :enqueued
  defp admission(0), do: :duplicate

  @doc """
  Take a job out of the flow, from pending, active, delayed, dead or
  waiting (CANCEL): `{:ok, :cancelled}`, `{:ok, :already_cancelled}`,
  `{:error, :no_job}`, `{:error, :state}` (a done job), `{:error, :kind}`.
  A running job's holder is fenced: its next call is refused. A flow's
  parent takes with it its open children, each in its own queue (a nested
  parent's too), and those it heard died that run again (retried, 1.11);
  a child that ended meanwhile, or is still dead, is left as it is (§7.8).
  """
  @spec cancel(Connector.conn(), binary, binary, keyword) ::
          {:ok, :cancelled | :already_cancelled} | {:error, term}
  def cancel(conn, queue, job_id, opts \\ []) do
    case one_id(conn, :cancel, queue, job_id, opts) do
      {:ok, n} when n in [0, 1] ->
        cancel_children(conn, queue, job_id, opts, MapSet.new([{queue, job_id}]))
        {:ok, if(n == 1, do: :cancelled, else: :already_cancelled)}

      other ->
        other
    end
  end

  # The children a cancel of parent `id` takes (CHILDREN names them), each
  # visited once (`seen`), however the flows name one another.
  defp cancel_children(conn, queue, id, opts, seen) do
    case one_id(conn, :children, queue, id, opts) do
      {:ok, [_incarnation, _open | children]} ->
        Enum.reduce(children, seen, fn [child, entry, _result], seen ->
          with {:ok, theirs, child_id} <- EchoMQ.Upkeep.Flows.job_ref(child),
               false <- MapSet.member?(seen, {theirs, child_id}),
               seen = MapSet.put(seen, {theirs, child_id}),
               true <- String.starts_with?(entry, "open") or runs_again?(conn, theirs, child_id, entry, opts),
               {:ok, _} <- one_id(conn, :cancel, theirs, child_id, opts) do
            cancel_children(conn, theirs, child_id, opts, seen)
          else
            # Seen, ended, still dead, or gone: left as it is.
            _ -> MapSet.put(seen, child_ref(child))
          end
        end)

      _ ->
        seen
    end
  end

  defp child_ref(child) do
    case EchoMQ.Upkeep.Flows.job_ref(child) do
      {:ok, queue, id} -> {queue, id}
      :error -> child
    end
  end

  # A child its parent heard died that runs again: retried (1.11).
  defp runs_again?(conn, queue, id, "dead", opts) do
    match?({:ok, %{state: state}} when state not in ["done", "dead", "cancelled"], inspect(conn, queue, id, opts))
  end

  defp runs_again?(_conn, _queue, _id, _entry, _opts), do: false

  @doc """
  A job as it is stored (INSPECT): its record, last error, progress,
  result, policy and headers, `{:ok, %EchoMQ.JobInfo{}}`; `{:error,
  :no_job}` when there is none. Records with or without the native
  stamps read alike (§3).
  """
  @spec inspect(Connector.conn(), binary, binary, keyword) :: {:ok, JobInfo.t()} | {:error, term}
  def inspect(conn, queue, job_id, opts \\ []) do
    case one_id(conn, :inspect, queue, job_id, opts) do
      {:ok, [[] | _]} -> {:error, :no_job}
      {:ok, reply} -> {:ok, JobInfo.read(job_id, reply)}
      other -> other
    end
  end

  @doc """
  What a done job's handler returned (ACK's RESULT): `{:ok, bytes}`, or
  `{:ok, nil}` for a job that kept none or is not done yet; `{:error,
  :no_job}` when there is no such job.
  """
  @spec result(Connector.conn(), binary, binary, keyword) :: {:ok, binary | nil} | {:error, term}
  def result(conn, queue, job_id, opts \\ []) do
    with {:ok, info} <- __MODULE__.inspect(conn, queue, job_id, opts), do: {:ok, info.result}
  end

  @doc """
  Send a dead job back to pending, by hand (RETRY; a flow's parent whose
  children have not all ended goes back to waiting for them): `{:ok, :retried}`;
  `{:error, :no_job}`, `{:error, :state}` (a job that is not dead),
  `{:error, :kind}`. Its last error stays readable. A parent with a child it
  heard died that was retried since and has not told it its end is refused,
  `{:error, {:running_again, ["{queue}JOB_… pending", …]}}`, nothing changed:
  RETRY counts a child recorded dead as ended, so retried now the parent
  would run first and read it dead (§7, RETRY). `force: true` sends it all
  the same (RETRY alone).
  """
  @spec retry(Connector.conn(), binary, binary, keyword) :: {:ok, :retried} | {:error, term}
  def retry(conn, queue, job_id, opts \\ []) do
    {force, opts} = Keyword.pop(opts, :force, false)

    with :ok <- if(force, do: :ok, else: no_reruns(conn, queue, job_id, opts)),
         {:ok, 1} <- one_id(conn, :retry, queue, job_id, opts),
         do: {:ok, :retried}
  end

  # `:ok`, or the children parent `id` heard died that run again (retried,
  # or done with their notice on its way): one INSPECT a child heard dead.
  defp no_reruns(conn, queue, id, opts) do
    case one_id(conn, :children, queue, id, opts) do
      {:ok, [_incarnation, _open | children]} ->
        again =
          for [child, "dead", _result] <- children,
              {:ok, theirs, child_id} <- [EchoMQ.Upkeep.Flows.job_ref(child)],
              {:ok, %{state: state}} <- [inspect(conn, theirs, child_id, opts)],
              state not in ["dead", "cancelled"],
              do: "#{child} #{state}"

        # Only a dead parent: RETRY refuses any other as it is.
        if again == [] or not match?({:ok, %{state: "dead"}}, inspect(conn, queue, id, opts)),
          do: :ok,
          else: {:error, {:running_again, again}}

      _ ->
        :ok
    end
  end

  @doc """
  How many jobs the queue holds in each state (STATS, with `waiting`, the
  flows' parents): `{:ok, %{pending: n, active: n, …}}`.
  """
  @spec stats(Connector.conn(), binary, keyword) :: {:ok, %{atom => non_neg_integer}} | {:error, term}
  def stats(conn, queue, opts \\ []) do
    Keyspace.valid_queue!(queue)
    Args.only!(opts, [:via])
    via = Keyword.get(opts, :via, Connector)

    with {:ok, counts} <- via.eval(conn, :stats, Keyspace.keys(:stats, queue), []) do
      {:ok, Enum.zip([:pending, :active, :delayed, :done, :dead, :cancelled, :waiting], counts) |> Map.new()}
    end
  end

  @doc """
  Add a schedule to the queue, or replace the one of that name (SCHEDULE):
  a job with `payload` at every multiple of `every` ms since the Unix
  epoch, its first tick the first after the server's now (§11.6). `missed:`
  says what a late worker fires: `"last"` (default), `"none"`, `"all:<n>"`.
  `{:ok, :added}` or `{:ok, :replaced}`. Every worker of the queue fires it.
  """
  @spec schedule_every(Connector.conn(), binary, binary, pos_integer, binary, keyword) ::
          {:ok, :added | :replaced} | {:error, term}
  def schedule_every(conn, queue, name, every, payload, opts \\ []) do
    Keyspace.valid_queue!(queue)
    Args.only!(opts, [:via, :missed])
    via = Keyword.get(opts, :via, Connector)
    most = Protocol.size("MAX_SCHEDULE_NAME")

    unless is_binary(name) and byte_size(name) in 1..most,
      do: raise(InvalidInput, "a schedule name is 1 to #{most} bytes, not #{Kernel.inspect(name)}")

    Args.integer("every (ms)", every, "DELAY_MS")
    if every < 1, do: raise(InvalidInput, "every is at least 1 ms")
    missed = Keyword.get(opts, :missed, "last")
    schedule = %EchoMQ.Schedule{every: every, missed: missed, payload: Args.bytes("payload", payload)}

    if EchoMQ.Schedule.read(EchoMQ.Schedule.definition(schedule)) != schedule,
      do: raise(InvalidInput, "missed is \"last\", \"none\" or \"all:<1..1000>\", not #{Kernel.inspect(missed)}")

    keys = Keyspace.keys(:schedule, queue)

    with {:ok, [now | _]} <- via.eval(conn, :schedules, keys, ["DUE", "1", "LIMIT", "1"]),
         first = Integer.to_string(EchoMQ.Schedule.first_after(schedule, now)),
         {:ok, added} <- via.eval(conn, :schedule, keys, [name, EchoMQ.Schedule.definition(schedule), first]) do
      {:ok, if(added == 1, do: :added, else: :replaced)}
    end
  end

  defp one_id(conn, transition, queue, job_id, opts) do
    Keyspace.valid_queue!(queue)
    Args.only!(opts, [:via])
    via = Keyword.get(opts, :via, Connector)
    id = Args.id(job_id)

    case via.eval(conn, transition, Keyspace.keys(transition, queue, job: id), [id]) do
      {:error, {:server, text}} -> refusal(text)
      answer -> answer
    end
  end

  @doc false
  def refusal("EMQKIND" <> _), do: {:error, :kind}
  def refusal("EMQNOJOB" <> _), do: {:error, :no_job}
  def refusal("EMQSTATE" <> _), do: {:error, :state}
  def refusal("EMQFENCE" <> _), do: {:error, :fence}
  def refusal(text), do: {:error, {:server, text}}
end
