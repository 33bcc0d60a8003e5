defmodule EchoMQ.JobsTest do
  use ExUnit.Case, async: true
  use EchoMQ.Test.Executors

  alias EchoMQ.{Id, Jobs, Redis}

  both "enqueue answers the seed's three answers and writes the seed's record", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    assert Jobs.enqueue(conn, queue, id, "hello", via: via) == {:ok, :enqueued}
    assert Jobs.enqueue(conn, queue, id, "again", via: via) == {:ok, :duplicate}
    assert Jobs.enqueue(conn, queue, "ORDER_1", "x", via: via) == {:error, :kind}

    {:ok, record} = Redis.query(conn, ["HGETALL", EchoMQ.Keyspace.job_key(queue, id)])
    fields = record |> Enum.chunk_every(2) |> Map.new(fn [k, v] -> {k, v} end)

    assert Map.take(fields, ["state", "attempts", "payload"]) ==
             %{"state" => "pending", "attempts" => "0", "payload" => "hello"}

    # Three fields via Lua; five via the module, its two stamps equal at birth (§3).
    case ctx.kind do
      :lua ->
        assert map_size(fields) == 3

      :native ->
        assert map_size(fields) == 5
        assert fields["enqueued_at"] == fields["updated_at"]
    end

    assert Redis.query(conn, ["ZRANGE", EchoMQ.Keyspace.queue_key(queue, "pending"), "0", "-1"]) == {:ok, [id]}
    assert Redis.query(conn, ["EXISTS", EchoMQ.Keyspace.job_key(queue, "ORDER_1")]) == {:ok, "0"}
  end

  both "the seed's two keys give the same answers and log no event", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    assert Jobs.enqueue(conn, queue, id, "seed", via: via, keys: :seed) == {:ok, :enqueued}
    assert Jobs.enqueue(conn, queue, id, "seed", via: via, keys: :seed) == {:ok, :duplicate}
    assert Jobs.enqueue(conn, queue, "NOPE", "seed", via: via, keys: :seed) == {:error, :kind}
    assert Redis.query(conn, ["EXISTS", EchoMQ.Keyspace.queue_key(queue, "events")]) == {:ok, "0"}

    other = Id.mint()
    assert Jobs.enqueue(conn, queue, other, "full", via: via) == {:ok, :enqueued}

    {:ok, [[_, ["event", "enqueued", "id", ^other, "state", "pending"]]]} =
      Redis.query(conn, ["XRANGE", EchoMQ.Keyspace.queue_key(queue, "events"), "-", "+"])
  end

  both "enqueue takes the job's options and inspect reads them back", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()

    assert {:ok, :enqueued} =
             Jobs.enqueue(conn, queue, id, "opts",
               via: via,
               priority: 5,
               delay: 60_000,
               attempts: 3,
               backoff_exp: 1000,
               timeout: 30_000,
               headers: %{"tenant" => "acme"}
             )

    {:ok, info} = Jobs.inspect(conn, queue, id, via: via)
    assert info.state == "delayed" and info.attempts == 0 and info.payload == "opts"
    assert info.policy == %EchoMQ.Policy{attempts: 3, backoff_exp: 1000, timeout: 30_000}
    assert info.headers == %{"tenant" => "acme"}
    assert info.enqueued_at != nil == (ctx.kind == :native)

    unique = Id.mint()
    assert {:ok, :enqueued} = Jobs.enqueue(conn, queue, unique, "u", via: via, unique: "k", unique_for: 60_000)

    assert {:ok, {:held_by, ^unique}} =
             Jobs.enqueue(conn, queue, Id.mint(), "u", via: via, unique: "k", unique_for: 60_000)
  end

  both "enqueue_many answers each job, in calls of at most 1000", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    ids = for _ <- 1..1203, do: Id.mint()
    first = Enum.at(ids, 7)
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, first, "before", via: via)
    {:ok, answers} = Jobs.enqueue_many(conn, queue, Enum.map(ids, &{&1, "p"}), via: via)
    assert length(answers) == 1203
    assert Enum.at(answers, 7) == :duplicate
    assert Enum.count(answers, &(&1 == :enqueued)) == 1202
    assert Redis.query(conn, ["ZCARD", EchoMQ.Keyspace.queue_key(queue, "pending")]) == {:ok, "1203"}
    assert Jobs.enqueue_many(conn, queue, [{"BAD", "p"}], via: via) == {:error, :kind}
  end

  both "cancel, inspect and result answer as the protocol says", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, id, "c", via: via)
    assert Jobs.result(conn, queue, id, via: via) == {:ok, nil}
    assert Jobs.cancel(conn, queue, id, via: via) == {:ok, :cancelled}
    assert Jobs.cancel(conn, queue, id, via: via) == {:ok, :already_cancelled}
    assert {:ok, %EchoMQ.JobInfo{state: "cancelled"}} = Jobs.inspect(conn, queue, id, via: via)
    missing = Id.mint()
    assert Jobs.cancel(conn, queue, missing, via: via) == {:error, :no_job}
    assert Jobs.inspect(conn, queue, missing, via: via) == {:error, :no_job}
    assert Jobs.result(conn, queue, missing, via: via) == {:error, :no_job}
    assert Jobs.cancel(conn, queue, "NOTJOB", via: via) == {:error, :kind}

    # A done job: its result, and CANCEL refused (EMQSTATE).
    done = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, done, "d", via: via)

    {:ok, [[^done, token, "d" | _]]} =
      via.eval(conn, :claim, EchoMQ.Keyspace.keys(:claim, queue), ["60000", "COUNT", "1"])

    {:ok, 1} = via.eval(conn, :ack, EchoMQ.Keyspace.keys(:ack, queue, job: done), [done, "#{token}", "RESULT", "42"])
    assert Jobs.result(conn, queue, done, via: via) == {:ok, "42"}
    assert Jobs.cancel(conn, queue, done, via: via) == {:error, :state}
  end

  both "cancel of a flow's parent takes its open children and a retried dead one (1.11)", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    children = queue <> "-children"
    # Minted first, `dead` sorts first in pending (one score): the claim below takes it.
    [parent, dead, open, retried] = for _ <- 1..4, do: Id.mint()
    for id <- [dead, open, retried], do: {:ok, :enqueued} = Jobs.enqueue(conn, children, id, "c", via: via)
    refs = for id <- [open, retried, dead], do: "{#{children}}#{id}"
    flow = [parent, "parent", "3" | Enum.flat_map(refs, &[&1, "ignore"])]
    {:ok, [1, _]} = via.eval(conn, :flow, EchoMQ.Keyspace.keys(:flow, queue, job: parent), flow)
    # The parent heard two of them died; one was retried since (pending again).
    [_, retried_ref, dead_ref] = refs
    key = EchoMQ.Keyspace.children_key(queue, parent)
    {:ok, _} = Redis.query(conn, ["HSET", key, retried_ref, "dead", dead_ref, "dead", "open", "1"])

    {:ok, [[^dead, token, "c" | _]]} =
      via.eval(conn, :claim, EchoMQ.Keyspace.keys(:claim, children), ["60000", "COUNT", "1"])

    fail = [dead, "#{token}", "1", "0", "boom"]
    {:ok, _} = via.eval(conn, :fail, EchoMQ.Keyspace.keys(:fail, children, job: dead), fail)

    assert Jobs.cancel(conn, queue, parent, via: via) == {:ok, :cancelled}

    state = fn id ->
      {:ok, info} = Jobs.inspect(conn, children, id, via: via)
      info.state
    end

    assert {state.(open), state.(retried), state.(dead)} == {"cancelled", "cancelled", "dead"}
  end

  both "retry refuses a parent whose retried child has not told it its end (1.11)", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    children = queue <> "-children"
    [parent, retried] = for _ <- 1..2, do: Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, children, retried, "c", via: via)
    ref = "{#{children}}#{retried}"

    {:ok, [1, _]} =
      via.eval(conn, :flow, EchoMQ.Keyspace.keys(:flow, queue, job: parent), [parent, "p", "1", ref, "fail"])

    # The parent heard it died; it was retried since (pending again).
    {:ok, _} = Redis.query(conn, ["HSET", EchoMQ.Keyspace.children_key(queue, parent), ref, "dead", "open", "0"])
    # A waiting parent is RETRY's to refuse, as it is.
    assert Jobs.retry(conn, queue, parent, via: via) == {:error, :state}
    # The parent died of it (as RESOLVE would have made it).
    {:ok, _} = Redis.query(conn, ["HSET", "emq:{#{queue}}:job:#{parent}", "state", "dead"])
    {:ok, _} = Redis.query(conn, ["ZREM", "emq:{#{queue}}:waiting", parent])
    {:ok, _} = Redis.query(conn, ["ZADD", "emq:{#{queue}}:dead", "1", parent])
    assert Jobs.retry(conn, queue, parent, via: via) == {:error, {:running_again, ["#{ref} pending"]}}
    assert Jobs.retry(conn, queue, parent, via: via, force: true) == {:ok, :retried}
  end

  both "inspect reads a job's group with its seventh key (1.7)", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, id, "g", via: via)
    assert {:ok, %EchoMQ.JobInfo{group: nil}} = Jobs.inspect(conn, queue, id, via: via)
    group_key = EchoMQ.Keyspace.keys(:inspect, queue, job: id) |> List.last()
    assert String.ends_with?(group_key, ":group")
    {:ok, "1"} = Redis.query(conn, ["HSET", group_key, id, "tenant-7"])
    assert {:ok, %EchoMQ.JobInfo{group: "tenant-7"}} = Jobs.inspect(conn, queue, id, via: via)
  end

  both "retry sends a dead job back; stats counts each state", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, id, "r", via: via)
    assert Jobs.retry(conn, queue, id, via: via) == {:error, :state}
    {:ok, [[^id, 1, "r"]]} = via.eval(conn, :claim, EchoMQ.Keyspace.keys(:claim, queue), ["60000", "COUNT", "1"])
    fail = EchoMQ.Keyspace.keys(:fail, queue, job: id)
    {:ok, "dead"} = via.eval(conn, :fail, fail, [id, "1", "1", "0", "it broke"])
    assert {:ok, %{dead: 1, pending: 0}} = Jobs.stats(conn, queue, via: via)
    assert Jobs.retry(conn, queue, id, via: via) == {:ok, :retried}
    assert {:ok, %{state: "pending", error: "it broke"}} = Jobs.inspect(conn, queue, id, via: via)

    assert Jobs.stats(conn, queue, via: via) ==
             {:ok, %{pending: 1, active: 0, delayed: 0, done: 0, dead: 0, cancelled: 0, waiting: 0}}

    assert Jobs.retry(conn, queue, Id.mint(), via: via) == {:error, :no_job}
  end

  @tag kind: :lua
  test "a flushed script cache is loaded again on NOSCRIPT, one call and a pipeline alike", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    {:ok, "OK"} = Redis.query(conn, ["SCRIPT", "FLUSH"])
    assert Jobs.enqueue(conn, queue, Id.mint(), "after a flush", via: via) == {:ok, :enqueued}
    {:ok, "OK"} = Redis.query(conn, ["SCRIPT", "FLUSH"])
    stats = {:stats, EchoMQ.Keyspace.keys(:stats, queue), []}
    assert via.eval_many(conn, [stats, stats]) == [{:ok, [1, 0, 0, 0, 0, 0, 0]}, {:ok, [1, 0, 0, 0, 0, 0, 0]}]
  end

  both "an id that is no branded one is a job like any other (§1)", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    assert Jobs.enqueue(conn, queue, "JOB-7", "derived", via: via) == {:ok, :enqueued}
    assert {:ok, %EchoMQ.JobInfo{state: "pending", payload: "derived"}} = Jobs.inspect(conn, queue, "JOB-7", via: via)
    assert Jobs.cancel(conn, queue, "JOB-7", via: via) == {:ok, :cancelled}
  end
end
