defmodule EchoMQ.Job do
  @moduledoc """
  A claimed job, as its handler sees it: the queue, the id, the fencing
  `token` this claim minted (§6: how many times the job was claimed, this
  claim included), the `payload`, the job's own `policy` (§7.2) and its
  `headers` (§7.6, a map of strings; `traceparent` among them when the
  producer sent a trace context).
  """

  alias EchoMQ.{Args, Keyspace}

  defstruct [:queue, :id, :token, :payload, :policy, headers: %{}, conn: nil, via: nil]

  @type t :: %__MODULE__{
          queue: binary,
          id: binary,
          token: pos_integer,
          payload: binary,
          policy: EchoMQ.Policy.t() | nil,
          headers: %{binary => binary},
          conn: pid | nil,
          via: module | nil
        }

  @doc """
  Report how far the job got (PROGRESS, at most 4096 bytes): `:ok`, or
  `{:error, :fence}` / `{:error, :no_job}` when the lease was lost (the
  worker is stopping the handler).
  """
  @spec progress(t, binary) :: :ok | {:error, term}
  def progress(%__MODULE__{} = job, value) do
    value = Args.bytes("progress value", value, "MAX_PROGRESS")
    keys = Keyspace.keys(:progress, job.queue, job: job.id)

    case job.via.eval(job.conn, :progress, keys, [job.id, Integer.to_string(job.token), value]) do
      {:ok, 1} -> :ok
      {:error, {:server, text}} -> EchoMQ.Jobs.refusal(text)
      other -> other
    end
  end

  @doc "The producer's W3C trace context, when it sent one (§7.6)."
  @spec traceparent(t) :: binary | nil
  def traceparent(%__MODULE__{headers: headers}), do: headers["traceparent"]

  @doc false
  # One element of CLAIM's reply: [id, token, payload, policy?, headers?].
  def read([id, token, payload | rest], queue, conn, via) when is_integer(token) do
    %__MODULE__{
      queue: queue,
      id: id,
      token: token,
      payload: payload,
      policy: EchoMQ.Policy.parse(Enum.at(rest, 0)),
      headers: EchoMQ.JobInfo.headers(Enum.at(rest, 1)),
      conn: conn,
      via: via
    }
  end
end
