defmodule EchoMQ.Upkeep.Flows do
  @moduledoc """
  The flows' part of the upkeep (PROTOCOL.md §7.8, §11.3):

  - **the relay**: while `<q>notices` holds entries, each is carried to
    its parent's queue as a RESOLVE (one pipeline for all), then `XDEL` of
    those answered (`1` or `0`: either way the parent has heard). A refused
    RESOLVE leaves its notice for the next period, said in the log; an
    entry that does not read as a notice stays too, said each time;
  - **the sweep**: a producer that died between a parent's FLOW and its
    children's ENQUEUEs leaves the parent waiting. When the head of
    `<q>waiting` has waited past the grace, up to 10 such parents are
    looked at: their open children's queues relayed first (a child done,
    its notice on its way, is told as done, never taken for gone), then
    each child still open is read (INSPECT): none is RESOLVE `gone`; done,
    dead or cancelled is RESOLVE of that outcome; any other state is left
    to tell its parent itself. Then the parent's score moves to now, so the
    next sweep looks at others.
  """
  require Logger

  alias EchoMQ.{Keyspace, Redis}

  @relay_step 100
  @sweep_parents 10
  @grace 60_000

  @doc "Relay `queue`'s notices from `start` on, again at once while a read was full, until `deadline`."
  def relay(state, queue, start, deadline) do
    key = Keyspace.queue_key(queue, "notices")

    with {:ok, n} when n != "0" <- Redis.query(state.conn, ["XLEN", key]),
         {:ok, entries} <- Redis.query(state.conn, ["XRANGE", key, start, "+", "COUNT", "#{@relay_step}"]) do
      readable = for [id, fields] <- entries, call = resolve(fields), call != nil, do: {id, call}

      for [id, fields] <- entries, resolve(fields) == nil do
        Logger.warning("a notice that does not read as one stays in #{key} (entry #{id}): #{inspect(fields)}")
      end

      answers = state.via.eval_many(state.conn, Enum.map(readable, &elem(&1, 1)))
      answered = for {{id, _}, answer} <- Enum.zip(readable, answers), answered?(answer, id, queue), do: id
      if answered != [], do: Redis.query(state.conn, ["XDEL", key | answered])
      [last | _] = List.last(entries)

      if length(entries) == @relay_step and System.monotonic_time(:millisecond) < deadline,
        do: relay(state, queue, "(" <> last, deadline),
        else: :ok
    else
      {:ok, _none} -> :ok
      other -> Logger.warning("the relay of #{queue} failed: #{inspect(other)}")
    end
  end

  defp answered?({:ok, _}, _id, _queue), do: true

  defp answered?(other, id, queue) do
    Logger.warning("notice #{id} of #{queue} could not reach its parent: #{inspect(other)}; it stays")
    false
  end

  @doc false
  # A notice's RESOLVE in its parent's queue, or nil when it does not read as a notice.
  def resolve(fields) do
    found = fields |> Enum.chunk_every(2) |> Map.new(fn [k, v] -> {k, v} end)

    with {:ok, queue, parent} <- job_ref(found["parent"]),
         {:ok, _, _} <- job_ref(found["child"]),
         incarnation when is_binary(incarnation) <- found["incarnation"],
         true <- Regex.match?(~r/\A\d{1,15}\z/, incarnation),
         true <- found["outcome"] in ["done", "dead", "cancelled", "gone"] do
      result = if found["result"], do: ["RESULT", found["result"]], else: []

      {:resolve, Keyspace.keys(:resolve, queue, job: parent),
       [parent, incarnation, found["child"], found["outcome"] | result]}
    else
      _ -> nil
    end
  end

  @doc false
  # `{<queue>}<id>` (§7.8): the first `}` ends the queue's name.
  def job_ref("{" <> rest) do
    with [queue, id] <- :binary.split(rest, "}"),
         true <- byte_size(queue) in 1..255 and not String.contains?(queue, ["{", <<0>>]),
         true <- Keyspace.job_id?(id) do
      {:ok, queue, id}
    else
      _ -> :error
    end
  end

  def job_ref(_), do: :error

  @doc "The sweep, when the head of the queue's `<q>waiting` has waited past the grace (one round trip to know)."
  def sweep_when_due(state, grace \\ @grace) do
    waiting = Keyspace.queue_key(state.queue, "waiting")

    case Redis.pipeline(state.conn, [["TIME"], ["ZRANGE", waiting, "0", "0", "WITHSCORES"]]) do
      [{:ok, [seconds, micros]}, {:ok, [_, score]}] ->
        now = String.to_integer(seconds) * 1000 + div(String.to_integer(micros), 1000)
        if score_of(score) <= now - grace, do: sweep(state, now, grace), else: :ok

      [{:ok, _}, {:ok, []}] ->
        :ok

      other ->
        Logger.warning("the sweep of #{state.queue} could not read its parents: #{inspect(other)}")
    end
  end

  defp score_of(text), do: text |> Float.parse() |> elem(0)

  defp sweep(state, now, grace) do
    waiting = Keyspace.queue_key(state.queue, "waiting")

    case Redis.query(state.conn, ["ZRANGE", waiting, "0", "#{@sweep_parents - 1}", "WITHSCORES"]) do
      {:ok, head} ->
        for [parent, score] <- Enum.chunk_every(head, 2), score_of(score) <= now - grace do
          sweep_one(state, parent)
          Redis.query(state.conn, ["ZADD", waiting, "XX", "GT", "#{now}", parent])
        end

        :ok

      other ->
        Logger.warning("the sweep of #{state.queue} could not read its parents: #{inspect(other)}")
    end
  end

  defp sweep_one(state, parent) do
    with [_, _ | _] = first <- children(state, parent) do
      deadline = System.monotonic_time(:millisecond) + 1_000

      for queue <- first |> open_children() |> Enum.map(&elem(&1, 0)) |> Enum.uniq(),
          do: relay(state, queue, "-", deadline)

      with [incarnation, _ | _] = again <- children(state, parent) do
        for {queue, id, child} <- open_children(again), do: resolve_child(state, parent, incarnation, queue, id, child)
      end
    end
  end

  defp children(state, parent) do
    case state.via.eval(state.conn, :children, Keyspace.keys(:children, state.queue, job: parent), [parent]) do
      {:ok, reply} -> reply
      other -> Logger.warning("CHILDREN of #{parent} failed: #{inspect(other)}") && []
    end
  end

  defp open_children([_incarnation, _open | children]) do
    for [child, "open" <> _, _] <- children, {:ok, queue, id} <- [job_ref(child)], do: {queue, id, child}
  end

  defp resolve_child(state, parent, incarnation, queue, id, child) do
    {outcome, result} =
      case EchoMQ.Jobs.inspect(state.conn, queue, id, via: state.via) do
        {:error, :no_job} -> {"gone", nil}
        {:ok, %{state: "done", result: result}} -> {"done", result}
        {:ok, %{state: ended}} when ended in ["dead", "cancelled"] -> {ended, nil}
        _ -> {nil, nil}
      end

    if outcome do
      args = [parent, incarnation, child, outcome | if(result, do: ["RESULT", result], else: [])]
      keys = Keyspace.keys(:resolve, state.queue, job: parent)

      case state.via.eval(state.conn, :resolve, keys, args) do
        {:ok, 1} -> Logger.info("the sweep told parent #{parent} of #{state.queue} that #{child} is #{outcome}")
        {:ok, 0} -> :ok
        other -> Logger.warning("the sweep's RESOLVE of #{parent} failed: #{inspect(other)}")
      end
    end
  end
end
