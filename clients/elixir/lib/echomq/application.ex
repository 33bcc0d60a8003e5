defmodule EchoMQ.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    Supervisor.start_link([EchoMQ.Id], strategy: :one_for_one, name: EchoMQ.Supervisor)
  end
end
