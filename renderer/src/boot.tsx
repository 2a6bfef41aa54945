// The app: the engine connection, notifications and the React tree (loaded by main.tsx once the shell has painted).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { startNotifications } from "./notify";
import { connect } from "./store";
import "./styles.css";

startNotifications();
void connect();
createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
