defmodule EchoMQ.Keyspace do
  @moduledoc """
  A queue's keys (PROTOCOL.md §2), built in one place: every key of queue
  `q` is `emq:{q}:<name>`, a job's record `emq:{q}:job:<id>`. Nothing else
  in this package formats a key.

  A queue name is 1 to 255 bytes, never `{`, `}` or NUL: one queue, one
  `{q}` hashtag, so one Cluster slot (§1). A job id is any binary whose
  first three bytes are `JOB` (the server's kind gate, `EMQKIND`); the ids
  this host mints are branded (`EchoMQ.Id.branded?/1`).
  """

  alias EchoMQ.{InvalidInput, Protocol}

  @max_queue 255

  @doc "The queue name, or `EchoMQ.InvalidInput` raised: 1 to 255 bytes, no brace, no NUL."
  @spec valid_queue!(term) :: binary
  def valid_queue!(queue) when is_binary(queue) do
    cond do
      byte_size(queue) not in 1..@max_queue ->
        raise InvalidInput, "queue name #{inspect(queue)}: it must be 1 to #{@max_queue} bytes"

      String.contains?(queue, ["{", "}", <<0>>]) ->
        raise InvalidInput, "queue name #{inspect(queue)}: it must not hold {, } or NUL"

      true ->
        queue
    end
  end

  def valid_queue!(queue), do: raise(InvalidInput, "a queue name is a binary, not #{inspect(queue)}")

  @doc "Whether `id` passes the server's kind gate: its first three bytes are `JOB` (§1)."
  @spec job_id?(term) :: boolean
  def job_id?(<<"JOB", _::binary>>), do: true
  def job_id?(_), do: false

  @doc "A queue's key of §2's table: `queue_key(\"emails\", \"pending\")` is `emq:{emails}:pending`."
  @spec queue_key(binary, binary) :: binary
  def queue_key(queue, name), do: "emq:{" <> queue <> "}:" <> name

  @doc "A job's record, `emq:{q}:job:<id>`."
  @spec job_key(binary, binary) :: binary
  def job_key(queue, job_id) when is_binary(job_id), do: queue_key(queue, "job:" <> job_id)

  @doc "A flow's parent's dependencies, `emq:{q}:children:<id>` (1.6, §7.8)."
  @spec children_key(binary, binary) :: binary
  def children_key(queue, job_id), do: queue_key(queue, "children:" <> job_id)

  @doc "The queue registry (§2, §11.3): every queue a speaker enqueued to or works."
  @spec registry() :: binary
  def registry, do: "emq:queues"

  @doc "The worker registry (§2, §11.3)."
  @spec workers() :: binary
  def workers, do: "emq:workers"

  @doc "A worker's registration, `emq:worker:<id>`."
  @spec worker_key(binary) :: binary
  def worker_key(id), do: "emq:worker:" <> id

  @doc """
  A transition's KEYS for `queue`, in §7's order: `job:` the id for a
  record's key, `state:` the set for a role like `done|dead|cancelled`,
  `count:` to send only the first n.
  """
  @spec keys(Protocol.transition(), binary, keyword) :: [binary]
  def keys(transition, queue, opts \\ []) do
    roles = Protocol.transition(transition).keys
    roles = if opts[:count], do: Enum.take(roles, opts[:count]), else: roles
    Enum.map(roles, &key_of(&1, transition, queue, opts))
  end

  defp key_of("job:<id>", _, queue, opts), do: job_key(queue, Keyword.fetch!(opts, :job))
  defp key_of("children:<id>", _, queue, opts), do: children_key(queue, Keyword.fetch!(opts, :job))

  defp key_of(role, transition, queue, opts) do
    if String.contains?(role, "|") do
      choices = String.split(role, "|")
      state = to_string(opts[:state])

      unless state in choices,
        do: raise(InvalidInput, "#{transition} takes one of #{Enum.join(choices, ", ")}, not #{inspect(opts[:state])}")

      queue_key(queue, state)
    else
      queue_key(queue, role)
    end
  end
end
