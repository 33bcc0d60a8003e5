defmodule EchoMQ.Worker.Finish do
  @moduledoc """
  How a worker ends its jobs: a handler's answer read as what to send
  (`run/2`, in the handler's task), then ACK's RESULT gathered into
  ACKMANY (`ack/1`), FAIL with the job's back-off, DEFER, and RELEASE with
  REFUND at a graceful stop. Each takes the worker's state and gives it
  back; a refusal by the fence (`EMQFENCE`, `EMQNOJOB`) means the job is no
  longer this worker's: said in the log, its result thrown away.
  """
  require Logger

  alias EchoMQ.{Args, Keyspace, Protocol}

  # DEFER's delay (§7's limits): checked in the handler's task, by `run/2`.
  @defer_ms (fn {low, high} -> low..high end).(Protocol.limit("DELAY_MS"))

  @doc false
  # In the handler's task: its answer as what the worker does next.
  def run(handler, job) do
    answer = if is_function(handler, 1), do: handler.(job), else: handler.perform(job)

    case answer do
      :ok ->
        {:ack, nil}

      {:ok, nil} ->
        {:ack, nil}

      {:ok, result} when is_binary(result) ->
        result_or_fail(result)

      {:ok, other} ->
        {:fail, "the handler's result is a binary, not #{inspect(other, limit: 20)}"}

      {:error, reason} when is_binary(reason) ->
        {:fail, reason}

      {:error, reason} ->
        {:fail, inspect(reason)}

      {:defer, ms} when is_integer(ms) and ms in @defer_ms ->
        {:defer, ms, false}

      {:defer, ms, :pause_queue} when is_integer(ms) and ms in @defer_ms ->
        {:defer, ms, true}

      {:defer, _} = bad ->
        not_an_answer(bad)

      {:defer, _, _} = bad ->
        not_an_answer(bad)

      other ->
        {:fail, "the handler answered #{inspect(other, limit: 20)}, not :ok, {:ok, _}, {:error, _} or {:defer, _}"}
    end
  catch
    kind, reason -> {:fail, Exception.format(kind, reason, __STACKTRACE__)}
  end

  # A bad defer fails the job here, in the task: a raise in the worker
  # would crash it, release the job and claim it again, for ever.
  defp not_an_answer(answer) do
    {:fail,
     "#{inspect(answer, limit: 20)} is not an answer: a defer is {:defer, ms} or {:defer, ms, :pause_queue}, " <>
       "ms an integer in #{inspect(@defer_ms)}"}
  end

  defp result_or_fail(result) do
    most = Protocol.size("MAX_RESULT")

    if byte_size(result) > most,
      do: {:fail, "the handler returned #{byte_size(result)} bytes: a result is at most #{most}"},
      else: {:ack, result}
  end

  @doc false
  # A job that finished waits for the next ACKMANY, sent once the messages
  # already in the mailbox (other jobs' answers) are read: jobs that finish
  # together are acked in one round trip.
  def finish(state, ref, {:ack, result}) do
    {%{job: job}, running} = Map.pop(state.running, ref)
    unless state.acking, do: send(self(), :ack)
    %{state | running: running, free: state.free + 1, acks: [{job, result} | state.acks], acking: true}
  end

  def finish(state, ref, outcome) do
    {entry, running} = Map.pop(state.running, ref)
    state = %{state | running: running, free: state.free + 1}
    %{job: job} = entry
    token = Integer.to_string(job.token)

    {transition, args} =
      case outcome do
        {:fail, text} ->
          {:fail, [job.id, token, "#{state.max_attempts}", backoff(state, job), Args.error_text(text)]}

        {:defer, ms, pause} ->
          {:defer,
           [
             job.id,
             token,
             Integer.to_string(ms),
             "#{state.max_attempts}",
             "PAUSE",
             if(pause, do: "1", else: "0")
           ]}
      end

    if transition == :fail,
      do: Logger.error("job #{job.id} of #{state.queue} failed (token #{job.token}): #{first_line(elem(outcome, 1))}")

    case state.via.eval(state.conn, transition, Keyspace.keys(transition, state.queue, job: job.id), args) do
      {:ok, _} when transition == :fail -> %{state | failed: state.failed + 1}
      {:ok, _} -> state
      {:error, {:server, "EMQ" <> _ = text}} -> lost(state, job, text)
      other -> Logger.warning("ending job #{job.id} failed: #{inspect(other)}; REAP takes it back") && state
    end
  end

  @doc false
  def ack(%{acks: []} = state), do: %{state | acking: false}

  def ack(state) do
    {batch, rest} = state.acks |> Enum.reverse() |> Enum.split(1000)

    args = Enum.flat_map(batch, fn {job, result} -> ack_args(job, result) end)

    state = %{state | acks: Enum.reverse(rest)}
    keys = Keyspace.keys(:ackmany, state.queue)

    case state.via.eval(state.conn, :ackmany, keys, args) do
      {:ok, replies} ->
        acked(state, batch, replies) |> ack()

      failed ->
        # The whole call failed (a connection, or a refusal of the whole
        # call, §7 ACKMANY): once more, then an ACK a job, so one bad
        # record costs only its own job and a lost reply no job at all (a
        # second ACK of an acked job is only fenced).
        Logger.warning("acking #{length(batch)} job(s) of #{state.queue} failed: #{inspect(failed)}; once more")

        case state.via.eval(state.conn, :ackmany, keys, args) do
          {:ok, replies} ->
            acked(state, batch, replies) |> ack()

          again ->
            Logger.warning("acking them failed again: #{inspect(again)}; an ACK each")

            calls =
              for {job, result} <- batch,
                  do: {:ack, Keyspace.keys(:ack, state.queue, job: job.id), ack_args(job, result)}

            acked(state, batch, state.via.eval_many(state.conn, calls)) |> ack()
        end
    end
  end

  defp ack_args(job, result), do: [job.id, Integer.to_string(job.token) | if(result, do: ["RESULT", result], else: [])]

  # Each job's answer, from ACKMANY or its own ACK.
  defp acked(state, batch, replies) do
    Enum.zip(batch, replies)
    |> Enum.reduce(state, fn
      {_, reply}, acc when reply in [1, {:ok, 1}] ->
        %{acc | processed: acc.processed + 1}

      {{job, _}, {:error, {:server, "EMQFENCE" <> _ = text}}}, acc ->
        lost(acc, job, text)

      {{job, _}, {:error, {:server, "EMQNOJOB" <> _ = text}}}, acc ->
        lost(acc, job, text)

      {{job, _}, other}, acc ->
        Logger.warning("acking job #{job.id} of #{acc.queue} failed: #{inspect(other)}; REAP takes it back") && acc
    end)
  end

  defp first_line(text), do: text |> String.split("\n", parts: 2) |> hd()

  defp backoff(state, job) do
    shift = min(max(job.token - 1, 0), 40)
    ms = min(state.backoff * Bitwise.bsl(1, shift), state.max_backoff)
    Integer.to_string(min(ms, 999_999_999_999))
  end

  @doc false
  def lost(state, job, text) do
    Logger.warning("job #{job.id} of #{state.queue} lost its lease (#{text}); its result is thrown away")
    state
  end

  @doc false
  def release(state, job) do
    keys = Keyspace.keys(:release, state.queue, job: job.id)
    args = [job.id, Integer.to_string(job.token), "REFUND", Integer.to_string(state.max_attempts)]

    case state.via.eval(state.conn, :release, keys, args) do
      {:ok, 1} -> Logger.info("released job #{job.id} of #{state.queue} (no attempt spent)")
      other -> Logger.warning("releasing job #{job.id} failed: #{inspect(other)}; REAP takes it back")
    end
  end
end
