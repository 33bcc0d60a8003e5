defmodule EchoMQ.Worker.Claims do
  @moduledoc """
  The worker's claiming process, with a connection of its own, since its
  calls block: asked `{:claim, count}`, it claims (CLAIM with its eight
  keys) and answers `{:claimed, reply}`. While the queue is idle it waits
  for an arrival without polling (§9): on Lua, a claim that took nothing
  (`[]` or `[-1]`) is followed by `BZPOPMIN <q>wake` for up to the idle
  wait; on the module, the claim itself blocks (`EMQ.CLAIM … BLOCK`).
  """

  alias EchoMQ.{Keyspace, Redis}

  @doc false
  def start_link(worker, redis, via, queue, lease, idle_wait) do
    {:ok, spawn_link(fn -> init(worker, redis, via, queue, lease, idle_wait) end)}
  end

  defp init(worker, redis, via, queue, lease, idle_wait) do
    {:ok, conn} = Redis.open(redis)
    state = %{worker: worker, conn: conn, via: via, queue: queue, lease: Integer.to_string(lease), idle: idle_wait}
    loop(state, Keyspace.keys(:claim, queue), Keyspace.queue_key(queue, "wake"))
  end

  defp loop(state, keys, wake) do
    receive do
      {:claim, count} ->
        send(state.worker, {:claimed, claim(state, keys, wake, Integer.to_string(count))})
        loop(state, keys, wake)
    end
  end

  defp claim(%{via: via} = state, keys, wake, count) do
    case via.kind() do
      :native ->
        via.eval(state.conn, :claim, keys, [state.lease, "COUNT", count, "BLOCK", Integer.to_string(state.idle)])

      :lua ->
        case via.eval(state.conn, :claim, keys, [state.lease, "COUNT", count]) do
          {:ok, idle} when idle in [[], [-1]] ->
            seconds = :erlang.float_to_binary(state.idle / 1000, decimals: 3)
            _ = Redis.query(state.conn, ["BZPOPMIN", wake, seconds], state.idle + 5_000)
            {:ok, idle}

          answer ->
            answer
        end
    end
  end
end
